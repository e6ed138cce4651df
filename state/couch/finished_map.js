function (doc) {
  // aso: the done and failed transfers by the hour and minute of their
  // last_update, for fleet-wide monitoring (aso serve) to count them in a
  // query (reduced by _count): [null, hour, link, state, minute] for every
  // user's, [user, hour, link, state, minute] for one user's. Hours and
  // minutes are counted since the epoch, in UTC; group_level 4 gives one
  // row per hour, link and state, group_level 5 one per minute.
  var m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|([+-])(\d\d):(\d\d))$/i.exec(typeof doc.last_update === 'string' ? doc.last_update : '');
  if (doc.type !== 'transfer' || typeof doc.user !== 'string' || (doc.state !== 'done' && doc.state !== 'failed') ||
      typeof doc.source !== 'string' || typeof doc.destination !== 'string' || !m) {
    return;
  }
  var ms = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
  if (m[9]) {
    ms -= (m[9] === '-' ? -1 : 1) * (+m[10] * 60 + +m[11]) * 60000;
  }
  var minute = Math.floor(ms / 60000);
  var hour = Math.floor(minute / 60);
  var link = doc.source + '->' + doc.destination;
  emit([null, hour, link, doc.state, minute], null);
  emit([doc.user, hour, link, doc.state, minute], null);
}
