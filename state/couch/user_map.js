function (doc) {
  // aso: the transfers of each user by state and creation, for the
  // commands that read one user's transfers (aso list, kill, retry, rm,
  // status --user, aso serve's pages) to read that user's only:
  // [user, state, created, _id] -> null, created in microseconds since the
  // epoch (0 for none or unparsable), so that a state's rows come in the
  // order of List (oldest created first, then ID) and a page starts after
  // the last key of the one before. Reduced by _count.
  // include micros.js
  if (doc.type !== 'transfer' || typeof doc.user !== 'string' || typeof doc.state !== 'string') {
    return;
  }
  emit([doc.user, doc.state, micros(doc.created), doc._id], null);
}
