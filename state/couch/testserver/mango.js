'use strict';
// Mango indexes built when they are read, as CouchDB builds them later.
//
// PouchDB's pouchdb-find builds a new index inside the request that
// creates it (POST /{db}/_index runs a query of it before answering), over
// every document already there. CouchDB 3.5 answers that request once the
// index's design document is written and builds the index afterwards, in
// the background or at the first _find that uses it. Here the index is
// built at that first _find: the build query of createIndex is answered
// empty, without touching the index.
//
// _find also takes CouchDB's "update": false, which reads the index as it
// is, without bringing it up to date first (the view query's stale=ok).
//
// install must run before pouchdb-find is loaded (express-pouchdb loads it
// when it starts its daemons): pouchdb-find takes its view engine from
// pouchdb-abstract-mapreduce when it is loaded, and install wraps that
// engine for pouchdb-find's indexes (the local document "indexes"). wrap
// then marks the calls of createIndex and find once the plugin is in.

const { AsyncLocalStorage } = require('async_hooks');

// call is the pouchdb-find call being served: 'create' (createIndex's
// build) or 'stale' (find with update: false); none otherwise.
const call = new AsyncLocalStorage();

function install() {
  if (require.cache[require.resolve('pouchdb-find')]) {
    throw new Error('mango.js: pouchdb-find was loaded before install');
  }
  const id = require.resolve('pouchdb-abstract-mapreduce');
  const create = require(id);
  require.cache[id].exports = function (localDocName, ...rest) {
    const engine = create(localDocName, ...rest);
    if (localDocName !== 'indexes') return engine;
    return {
      ...engine,
      query(fun, opts) {
        switch (call.getStore()) {
          case 'create':
            return Promise.resolve({ total_rows: 0, offset: 0, rows: [] });
          case 'stale':
            return engine.query.call(this, fun, { ...opts, stale: 'ok' });
          default:
            return engine.query.call(this, fun, opts);
        }
      },
    };
  };
}

// wrap marks createIndex and find of PouchDB (the class given to
// express-pouchdb, once its daemons have started), and answers createIndex
// in CouchDB's order of fields.
function wrap(PouchDB) {
  const proto = PouchDB.prototype;
  const createIndex = proto.createIndex;
  const find = proto.find;
  if (typeof createIndex !== 'function' || typeof find !== 'function') {
    throw new Error('mango.js: pouchdb-find is not in');
  }
  proto.createIndex = function (def, cb) {
    const p = call.run('create', () => createIndex.call(this, def))
      .then((r) => ({ result: r.result, id: r.id, name: r.name }));
    if (typeof cb !== 'function') return p;
    p.then((r) => cb(null, r), cb);
  };
  proto.find = function (req, cb) {
    if (!req || req.update !== false) return find.call(this, req, cb);
    const { update, ...rest } = req;
    return call.run('stale', () => find.call(this, rest, cb));
  };
}

module.exports = { install, wrap };
