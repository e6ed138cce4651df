function (doc) {
  // aso: every transfer by the PFNs its submission recorded, for aso rm to
  // find who names a PFN without a scan. key: the PFN; value: [role
  // ("source" or "destination"), state, user].
  if (doc.type !== 'transfer' || typeof doc.state !== 'string' || typeof doc.user !== 'string') {
    return;
  }
  if (typeof doc.source_pfn === 'string' && doc.source_pfn !== '') {
    emit(doc.source_pfn, ['source', doc.state, doc.user]);
  }
  if (typeof doc.dest_pfn === 'string' && doc.dest_pfn !== '') {
    emit(doc.dest_pfn, ['destination', doc.state, doc.user]);
  }
}
