function (doc) {
  // aso: the work of each user, in one view so that a server keeps a single
  // index up to date for both queries of the agent.
  //  - [user, "queue", order]: the new and acquired transfers in claim
  //    order (ascending order); value: when the transfer may be claimed
  //    (retry_after of a new one, lease_expires of an acquired one), so that
  //    a client passes over those not due without reading them. The order
  //    is computed here from the document's own fields, so that a document
  //    another producer wrote is claimed like one aso wrote: the 10-digit
  //    inverted priority (2147483647 - priority), the 18-digit last_update
  //    in microseconds since the epoch, and the ID, joined by "|".
  //  - [user, "active", fts_job]: the submitted transfers by FTS job; value:
  //    last_update, so that the built-in _stats reduce grouped by key gives
  //    each job's number of transfers (count) and oldest update (min).
  // Times are microseconds since the epoch, 0 for none or unparsable.
  function parts(t) {
    var m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|([+-])(\d\d):(\d\d))$/i.exec(typeof t === 'string' ? t : '');
    if (!m) {
      return null;
    }
    var ms = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
    if (m[9]) {
      ms -= (m[9] === '-' ? -1 : 1) * (+m[10] * 60 + +m[11]) * 60000;
    }
    return { s: Math.floor(ms / 1000), us: ((m[7] || '.').substring(1) + '000000').substring(0, 6) };
  }
  function micros(t) {
    var p = parts(t);
    return p ? p.s * 1000000 + parseInt(p.us, 10) : 0;
  }
  function pad(n, w) {
    var s = String(n);
    while (s.length < w) {
      s = '0' + s;
    }
    return s;
  }
  if (doc.type !== 'transfer' || typeof doc.user !== 'string') {
    return;
  }
  if (doc.state === 'new' || doc.state === 'acquired') {
    var prio = typeof doc.priority === 'number' && Math.floor(doc.priority) === doc.priority &&
      doc.priority >= -2147483648 && doc.priority <= 2147483647 ? doc.priority : 0;
    var p = parts(doc.last_update);
    var at = p && p.s >= 0 ? pad(p.s, 12) + p.us : pad(0, 18);
    emit([doc.user, 'queue', pad(2147483647 - prio, 10) + '|' + at + '|' + doc._id],
      micros(doc.state === 'new' ? doc.retry_after : doc.lease_expires));
  } else if (doc.state === 'submitted' && typeof doc.fts_job === 'string') {
    emit([doc.user, 'active', doc.fts_job], micros(doc.last_update));
  }
}
