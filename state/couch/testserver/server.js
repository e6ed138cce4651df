'use strict';
// A CouchDB-compatible HTTP server on in-memory PouchDB, for aso's
// state/couch tests. It is express-pouchdb with the fixes kivik needs:
//   - no response compression (it buffers streamed responses),
//   - ETag = document revision (kivik reads revisions from it),
//   - gzip/deflate request bodies are inflated (kivik compresses bodies),
//   - GET /_up and GET /:db/_design_docs, which express-pouchdb lacks,
//   - uncaught errors are logged instead of killing the process,
//   - views are sorted in-memory indexes (mapreduce.js), checked against
//     PouchDB's own pouchdb-mapreduce (ASO_TEST_COUCH_VIEWS=pouchdb),
//   - _all_docs with keys reads one document per key (alldocs.js) instead
//     of opening a read stream per key, and only the revision tree when
//     the documents are not asked for,
//   - a Mango index is built at the first _find that reads it, not
//     inside the POST /_index that creates it (mango.js), as CouchDB
//     answers that request at once and builds the index later,
//   - old revisions are compacted after every write (auto_compaction), as
//     CouchDB's compaction daemon would do later, so that the memory and
//     the garbage collector's work do not grow with every revision,
//   - users, sessions and who may do what are CouchDB 3's: with
//     ADMIN_USER/ADMIN_PASS set, the server admin and the users of the
//     _users database authenticate with basic auth or a session cookie
//     (auth.js); server-wide requests need the admin, a database's need a
//     member by its _security object (security.js); validate_doc_update
//     runs with the writer's userCtx and the security object, design
//     documents need a database admin (validation.js). Without an admin
//     every request is the admin's ("admin party").
// Environment: HOST (default 127.0.0.1), PORT (default 0: any free port),
// LOG (express-pouchdb log file, default a file in the OS temp directory),
// ADMIN_USER/ADMIN_PASS (optional: the server admin; see above),
// PBKDF2_ITERATIONS (the iterations of a stored password, default CouchDB
// 3.5's 600,000).
// Once listening it prints "LISTENING http://HOST:PORT/" on stdout.

const http = require('http');
const os = require('os');
const path = require('path');
const zlib = require('zlib');
const crypto = require('crypto');
const express = require('express');
const expressPouchDB = require('express-pouchdb');

// ASO_TEST_COUCH_VIEWS=pouchdb serves views with PouchDB's own
// pouchdb-mapreduce instead of mapreduce.js: much slower, it is the
// reference the faster index is checked against (make couch-views).
const views = process.env.ASO_TEST_COUCH_VIEWS === 'pouchdb' ? require('pouchdb-mapreduce') : require('./mapreduce');

const PouchDB = require('pouchdb-core')
  .plugin(require('pouchdb-adapter-http'))
  .plugin(require('pouchdb-replication'))
  .plugin(views)
  .plugin(require('pouchdb-adapter-memory'));
// _all_docs with keys: one get, or one revision tree, per key (alldocs.js)
require('./alldocs')(PouchDB);
// Mango indexes built when read, not when created (mango.js)
const mango = require('./mango');
mango.install();
const users = require('./auth');
const security = require('./security');

const host = process.env.HOST || '127.0.0.1';
const port = Number(process.env.PORT || 0);
const logPath = process.env.LOG || path.join(os.tmpdir(), `aso-couch-testserver-${process.pid}.log`);

const pouchApp = expressPouchDB({
  mode: 'fullCouchDB',
  // authentication, security and validation are this server's own
  overrideMode: {
    exclude: ['compression', 'routes/fauxton', 'routes/authentication', 'routes/authorization', 'routes/session',
      'routes/special-test-auth', 'routes/security', 'validation'],
  },
  inMemoryConfig: true,
  logPath,
});

// ETag: the revision of the document in the body, as CouchDB sends it.
pouchApp.set('etag', (body) => {
  const text = Buffer.isBuffer(body) ? body.toString('utf8') : String(body);
  try {
    const doc = JSON.parse(text);
    if (doc && typeof doc === 'object' && !Array.isArray(doc)) {
      if (typeof doc._rev === 'string') return `"${doc._rev}"`;
      if (typeof doc.id === 'string' && typeof doc.rev === 'string') return `"${doc.rev}"`;
    }
  } catch (e) {
    // not JSON: fall through to a hash
  }
  return 'W/"' + crypto.createHash('sha1').update(text).digest('hex') + '"';
});

require('./validation')(pouchApp);

const adminUser = process.env.ADMIN_USER || '';
const adminPass = process.env.ADMIN_PASS || '';
const auth = users(adminUser, adminPass, self);
const guard = security();

const app = express();
app.get('/_up', (req, res) => res.json({ status: 'ok' }));
app.use(auth.keepCookie);
auth.openSessionRoute(app);
if (adminUser && adminPass) {
  app.use(auth.authenticate);
} else {
  app.use((req, res, next) => {
    // admin party: everyone is the admin
    req.userCtx = { name: null, roles: ['_admin'] };
    delete req.headers.authorization;
    delete req.headers.cookie;
    next();
  });
}
app.use(guard.guard);
auth.routes(app);
guard.routes(app);
app.get('/:db/_design_docs', (req, res, next) => {
  const q = new URLSearchParams(req.query);
  q.set('startkey', JSON.stringify('_design/'));
  q.set('endkey', JSON.stringify('_design0'));
  req.url = req.originalUrl = `/${encodeURIComponent(req.params.db)}/_all_docs?${q}`;
  req.query = undefined;
  next();
});
app.use(pouchApp);

// self makes a request of this server as its admin (the users' documents
// are read this way) and returns {status, body}.
function self(method, target) {
  return new Promise((resolve, reject) => {
    const headers = { Accept: 'application/json' };
    if (adminUser) headers.Authorization = 'Basic ' + Buffer.from(`${adminUser}:${adminPass}`).toString('base64');
    const r = http.request({ host, port: server.address().port, method, path: target, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        let body = null;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch (e) {
          // not JSON
        }
        resolve({ status: res.statusCode, body });
      });
    });
    r.on('error', reject);
    r.end();
  });
}

// inflateRequest replaces a compressed request body by its inflated bytes
// before express reads it.
function inflateRequest(req) {
  const enc = (req.headers['content-encoding'] || '').toLowerCase();
  if (enc !== 'gzip' && enc !== 'deflate') return;
  delete req.headers['content-encoding'];
  delete req.headers['content-length'];
  // Keep the request looking like one with a body (type-is checks these headers).
  req.headers['transfer-encoding'] = 'chunked';
  const chunks = [];
  const push = req.push.bind(req);
  req.push = (chunk, encoding) => {
    if (chunk !== null) {
      chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk, encoding));
      return true;
    }
    let body;
    try {
      const raw = Buffer.concat(chunks);
      body = enc === 'gzip' ? zlib.gunzipSync(raw) : zlib.inflateSync(raw);
    } catch (e) {
      req.emit('error', e);
      return push(null);
    }
    if (body.length > 0) push(body);
    return push(null);
  };
}

process.on('uncaughtException', (err) => console.error('uncaught exception:', err));
process.on('unhandledRejection', (err) => console.error('unhandled rejection:', err));

const server = http.createServer((req, res) => {
  inflateRequest(req);
  app(req, res);
});
// express-pouchdb starts its daemons (the plugins its routes need) when
// it is given PouchDB; requests wait until they have started.
const MemoryPouchDB = PouchDB.defaults({ adapter: 'memory', auto_compaction: true });
pouchApp.setPouchDB(MemoryPouchDB).then(() => {
  mango.wrap(MemoryPouchDB);
  server.listen(port, host, () => {
    const base = `http://${host}:${server.address().port}/`;
    console.log(`LISTENING ${base}`);
  });
});

function stop() {
  server.close();
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
