'use strict';
const { winningRev, isDeleted } = require('pouchdb-merge');
// _all_docs with keys, by one get per key.
//
// PouchDB answers allDocs({keys}) by opening a read stream per key: reading
// 2,000 documents by ID cost about three times what the same documents
// cost through a view's include_docs (mapreduce.js already reads those one
// get per document), and on a real CouchDB both are B-tree lookups. The
// rows are CouchDB's: {id, key, value: {rev}, doc} for a document,
// {id, key, value: {rev, deleted: true}, doc: null} for a deleted one,
// {key, error: "not_found"} for a missing one, in the order of the keys.
// Without the documents (and without conflicts) each row comes from the
// document's revision tree alone, as CouchDB answers it from its ID B-tree:
// a get would read the body too, which made the revision check of a
// monitor pass cost what reading every document costs.
// Anything else (no keys, keys that are not strings, skip, limit,
// descending, attachments, update_seq) goes to PouchDB's own allDocs, as
// do the deleted documents, whose revision only PouchDB's allDocs gives.

module.exports = function install(PouchDB) {
  const original = PouchDB.prototype.allDocs;
  PouchDB.prototype.allDocs = function allDocs(...args) {
    // PouchDB's own methods count their arguments: pass them on as given
    const opts = typeof args[0] === 'object' && args[0] !== null ? args[0] : null;
    const callback = typeof args[args.length - 1] === 'function' ? args[args.length - 1] : null;
    if (!opts || !Array.isArray(opts.keys) || !opts.keys.every((k) => typeof k === 'string') || opts.skip || opts.limit !== undefined || opts.descending ||
        opts.attachments || opts.update_seq || opts.conflicts && !opts.include_docs) {
      return original.apply(this, args);
    }
    const promise = byKeys(this, opts, original);
    if (callback) promise.then((res) => callback(null, res), callback);
    return promise;
  };
};

async function byKeys(db, opts, original) {
  const include = opts.include_docs === true || opts.include_docs === 'true';
  const conflicts = opts.conflicts === true || opts.conflicts === 'true';
  if (!include && !conflicts && typeof db._getRevisionTree === 'function') {
    return revisionsOnly(db, opts.keys);
  }
  const ids = [...new Set(opts.keys)];
  const got = new Map();
  const deleted = [];
  await Promise.all(ids.map((id) => db.get(id, conflicts ? { conflicts: true } : {}).then(
    (doc) => got.set(id, doc),
    (err) => {
      if (err && err.status === 404 && err.reason === 'deleted') deleted.push(id);
      else if (!err || err.status !== 404) throw err;
    })));
  const gone = new Map();
  if (deleted.length) {
    const res = await original.call(db, { keys: deleted });
    for (const row of res.rows) gone.set(row.key, row);
  }
  const rows = opts.keys.map((key) => {
    const doc = got.get(key);
    if (doc) return include ? { id: doc._id, key, value: { rev: doc._rev }, doc } : { id: doc._id, key, value: { rev: doc._rev } };
    const row = gone.get(key);
    if (row && !row.error) return include ? { ...row, doc: null } : row;
    return { key, error: 'not_found' };
  });
  const info = await db.info();
  return { total_rows: info.doc_count, offset: 0, rows };
}

// revisionsOnly answers keys without documents from each document's
// revision tree, as CouchDB answers them from its ID B-tree: no document
// body is read.
async function revisionsOnly(db, keys) {
  const trees = new Map();
  await Promise.all([...new Set(keys)].map((id) => new Promise((resolve) => {
    db._getRevisionTree(id, (err, tree) => {
      if (!err) trees.set(id, tree);
      resolve();
    });
  })));
  const rows = keys.map((key) => {
    const tree = trees.get(key);
    if (!tree) return { key, error: 'not_found' };
    const meta = { rev_tree: tree };
    const rev = winningRev(meta);
    return isDeleted(meta, rev) ? { id: key, key, value: { rev, deleted: true } } : { id: key, key, value: { rev } };
  });
  const info = await db.info();
  return { total_rows: info.doc_count, offset: 0, rows };
}
