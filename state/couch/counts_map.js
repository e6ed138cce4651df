function (doc) {
  // aso: the transfers by [user, state, link, error class, reason class],
  // for fleet-wide monitoring (aso serve) to count them in one query
  // (reduced by _stats, group=true: one row per key, count and oldest
  // last_update); value: last_update in microseconds since the epoch, 0
  // for none. The key is state.CountKeyOf's:
  //  - error class: "unknown" for a failed transfer without one;
  //  - reason class: state.ReasonClass of the reason of a failed transfer,
  //    or of a new one waiting to be retried (attempts > 0 and a reason),
  //    else "".
  // include micros.js
  // utf8Len is the length of s in UTF-8 bytes, as Go counts a string.
  function utf8Len(c) {
    return c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c < 0xdc00 ? 4 : c >= 0xdc00 && c < 0xe000 ? 0 : 3;
  }
  // reasonClass is state.ReasonClass: RE2's \s is [\t\n\f\r ], its \b is
  // ASCII as JavaScript's is, Go's TrimSpace trims Unicode White_Space, and
  // a class longer than 200 bytes is cut between characters.
  function reasonClass(r) {
    r = r.replace(/[\t\n\f\r ]*\([^()]*\)/g, '');
    r = r.replace(/\b[0-9a-f]{64}\b/g, '<transfer>');
    r = r.replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, '<job>');
    r = r.replace(/^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g, '');
    var bytes = 0;
    for (var i = 0; i < r.length; i++) {
      var n = utf8Len(r.charCodeAt(i));
      if (bytes + n > 200) {
        return r.substring(0, i) + '...';
      }
      bytes += n;
    }
    return r === '' ? '(no reason)' : r;
  }
  if (doc.type !== 'transfer' || typeof doc.user !== 'string' || typeof doc.state !== 'string' ||
      typeof doc.source !== 'string' || typeof doc.destination !== 'string') {
    return;
  }
  var cls = typeof doc.error_class === 'string' ? doc.error_class : '';
  var reason = typeof doc.reason === 'string' ? doc.reason : '';
  var why = '';
  if (doc.state === 'failed') {
    cls = cls || 'unknown';
    why = reasonClass(reason);
  } else if (doc.state === 'new' && doc.attempts > 0 && reason !== '') {
    why = reasonClass(reason);
  }
  emit([doc.user, doc.state, doc.source + '->' + doc.destination, cls, why], micros(doc.last_update));
}
