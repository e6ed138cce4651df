function (doc) {
  // aso: the documents with conflicting revisions (a CouchDB cluster's
  // replicas took concurrent writes), by user: [user, _id] -> null, for
  // transfers and run locks, so that a user's conflicts are found without
  // reading the database. CouchDB gives a map function the document's
  // _conflicts.
  if (typeof doc.user === 'string' && Array.isArray(doc._conflicts) && doc._conflicts.length > 0) {
    emit([doc.user, doc._id], null);
  }
}
