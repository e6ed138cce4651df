function (doc) {
  // aso: every transfer by the file it writes, for the deletion rule and
  // the one-owner check to read who names a destination without a scan.
  // key: [destination, destination_lfn]; value: [state, user, whether it
  // recorded ownership (dest_owned_since), adler32 or "", size, the
  // transfer that replaced or superseded it (superseded_by) or "",
  // dest_owned_since or ""].
  if (doc.type !== 'transfer' || typeof doc.destination !== 'string' || typeof doc.destination_lfn !== 'string') {
    return;
  }
  var sum = '';
  var cs = doc.checksums;
  if (cs && typeof cs === 'object') {
    for (var k in cs) {
      if (k.toLowerCase() === 'adler32' && typeof cs[k] === 'string') {
        sum = cs[k].toLowerCase();
      }
    }
  }
  emit([doc.destination, doc.destination_lfn],
    [doc.state, doc.user, typeof doc.dest_owned_since === 'string' && doc.dest_owned_since !== '', sum, doc.size || 0,
      typeof doc.superseded_by === 'string' ? doc.superseded_by : '',
      typeof doc.dest_owned_since === 'string' ? doc.dest_owned_since : '']);
}
