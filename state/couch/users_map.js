function (doc) {
  // aso: the work of each user by kind, for `aso run --all-users` to find
  // the users with due work in one query (reduced by _stats, group_level 2:
  // one row per user and kind, whose min says whether any is due).
  //  - [user, "new"]: new transfers without dependencies; value: when each
  //    may be claimed (retry_after, or created for one never retried).
  //  - [user, "deps"]: new transfers with dependencies, which a view cannot
  //    check; value as for "new".
  //  - [user, "acquired"]: acquired transfers; value: lease_expires.
  //  - [user, "active"]: submitted transfers; value: last_update.
  //  - [user, "lock"]: the user's run lock; value: its expiry (0 once
  //    released).
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
  if (doc.type === 'lock' && typeof doc.user === 'string') {
    emit([doc.user, 'lock'], micros(doc.expire));
    return;
  }
  if (doc.type !== 'transfer' || typeof doc.user !== 'string') {
    return;
  }
  if (doc.state === 'new') {
    var deps = Array.isArray(doc.depends_on) && doc.depends_on.length > 0 && !doc.kill_requested;
    emit([doc.user, deps ? 'deps' : 'new'], micros(doc.retry_after) || micros(doc.created));
  } else if (doc.state === 'acquired') {
    emit([doc.user, 'acquired'], micros(doc.lease_expires));
  } else if (doc.state === 'submitted') {
    emit([doc.user, 'active'], micros(doc.last_update));
  }
}
