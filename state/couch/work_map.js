function (doc) {
  // aso: the work of each user, in one view so that a server keeps a single
  // index up to date for both queries of the agent.
  //  - [user, "queue", claim_key]: the new and acquired transfers in claim
  //    order (ascending claim_key); value: when the transfer may be claimed
  //    (retry_after of a new one, lease_expires of an acquired one), so that
  //    a client passes over those not due without reading them.
  //  - [user, "active", fts_job]: the submitted transfers by FTS job; value:
  //    last_update, so that the built-in _stats reduce grouped by key gives
  //    each job's number of transfers (count) and oldest update (min).
  // Times are microseconds since the epoch, 0 for none or unparsable.
  function micros(t) {
    var m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|([+-])(\d\d):(\d\d))$/i.exec(typeof t === 'string' ? t : '');
    if (!m) {
      return 0;
    }
    var ms = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
    if (m[9]) {
      ms -= (m[9] === '-' ? -1 : 1) * (+m[10] * 60 + +m[11]) * 60000;
    }
    var frac = ((m[7] || '.').substring(1) + '000000').substring(0, 6);
    return ms * 1000 + parseInt(frac, 10);
  }
  if (doc.type !== 'transfer' || typeof doc.user !== 'string') {
    return;
  }
  if (doc.state === 'new' || doc.state === 'acquired') {
    if (typeof doc.claim_key === 'string' && doc.claim_key !== '') {
      emit([doc.user, 'queue', doc.claim_key], micros(doc.state === 'new' ? doc.retry_after : doc.lease_expires));
    }
  } else if (doc.state === 'submitted' && typeof doc.fts_job === 'string') {
    emit([doc.user, 'active', doc.fts_job], micros(doc.last_update));
  }
}
