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
  //  - [user, "done"], [user, "failed"], [user, "killed"]: finished
  //    transfers; value: last_update. With the kinds above they count a
  //    user's transfers by state, so that one read of the user's rows
  //    tells an agent whether the user has work, and whether it ever had
  //    a transfer.
  // Times are microseconds since the epoch, 0 for none or unparsable.
  // include micros.js
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
  } else if (doc.state === 'done' || doc.state === 'failed' || doc.state === 'killed') {
    emit([doc.user, doc.state], micros(doc.last_update));
  }
}
