'use strict';
// A CouchDB-compatible HTTP server on in-memory PouchDB, for aso's
// state/couch tests. It is express-pouchdb with the fixes kivik needs:
//   - no response compression (it buffers streamed responses),
//   - ETag = document revision (kivik reads revisions from it),
//   - gzip/deflate request bodies are inflated (kivik compresses bodies),
//   - GET /_up and GET /:db/_design_docs, which express-pouchdb lacks,
//   - documents written with new_edits=false keep their revision history
//     when validate_doc_update runs (pouchdb-validation drops it),
//   - uncaught errors are logged instead of killing the process,
//   - views are sorted in-memory indexes (mapreduce.js), checked against
//     PouchDB's own pouchdb-mapreduce (ASO_TEST_COUCH_VIEWS=pouchdb),
//   - _all_docs with keys reads one document per key (alldocs.js) instead
//     of opening a read stream per key, and only the revision tree when
//     the documents are not asked for,
//   - old revisions are compacted after every write (auto_compaction), as
//     CouchDB's compaction daemon would do later, so that the memory and
//     the garbage collector's work do not grow with every revision.
//   - with ADMIN_USER/ADMIN_PASS set, authentication is required as on a
//     real CouchDB 3 (no "admin party"): every request but GET / and
//     GET /_up needs HTTP basic auth with that user and password or the
//     cookie of a session opened with them (POST /_session), and is
//     answered 401 without it or with a wrong one.
// Environment: HOST (default 127.0.0.1), PORT (default 0: any free port),
// LOG (express-pouchdb log file, default a file in the OS temp directory),
// ADMIN_USER/ADMIN_PASS (optional: the server admin; see above).
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

const host = process.env.HOST || '127.0.0.1';
const port = Number(process.env.PORT || 0);
const logPath = process.env.LOG || path.join(os.tmpdir(), `aso-couch-testserver-${process.pid}.log`);

const pouchApp = expressPouchDB(PouchDB.defaults({ adapter: 'memory', auto_compaction: true }), {
  mode: 'fullCouchDB',
  overrideMode: { exclude: ['compression', 'routes/fauxton'] },
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

const app = express();
app.get('/_up', (req, res) => res.json({ status: 'ok' }));
app.post('/_session', express.json({ type: () => true }), openSession);
app.use(authenticate);
app.post('/:db/_bulk_docs', express.json({ limit: '4gb' }), keepRevisions);
app.get('/:db/_design_docs', (req, res, next) => {
  const q = new URLSearchParams(req.query);
  q.set('startkey', JSON.stringify('_design/'));
  q.set('endkey', JSON.stringify('_design0'));
  req.url = req.originalUrl = `/${encodeURIComponent(req.params.db)}/_all_docs?${q}`;
  req.query = undefined;
  next();
});
app.use(pouchApp);

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

// keepRevisions protects the revision histories of documents written with
// new_edits=false (as replication writes them, and as the tests make
// conflicting revisions): pouchdb-validation replaces each document's
// _revisions by those of the stored winner before validating it, which
// turns the write into a no-op; CouchDB keeps them.
function keepRevisions(req, res, next) {
  const b = req.body;
  if (b && b.new_edits === false && Array.isArray(b.docs)) {
    for (const d of b.docs) {
      if (d && typeof d === 'object' && d._revisions) {
        const revs = d._revisions;
        Object.defineProperty(d, '_revisions', { get: () => revs, set: () => {}, enumerable: true, configurable: true });
      }
    }
  }
  next();
}

// authenticate lets through requests with the admin's basic auth, GET /
// (CouchDB's welcome, open to all), and everything when no admin is set.
// PouchDB's own admin handling is not used: with an admin configured it
// hangs on unauthenticated requests instead of answering 401.
function authenticate(req, res, next) {
  const user = process.env.ADMIN_USER;
  const pass = process.env.ADMIN_PASS;
  if (!user || !pass || (req.method === 'GET' && req.path === '/')) return next();
  const m = /^Basic\s+(.+)$/i.exec(req.headers.authorization || '');
  if (m) {
    const text = Buffer.from(m[1], 'base64').toString('utf8');
    const i = text.indexOf(':');
    if (i < 0 || !safeEqual(text.slice(0, i), user) || !safeEqual(text.slice(i + 1), pass)) {
      return unauthorized(res, 'Name or password is incorrect.');
    }
  } else if (!sessions.has(sessionCookie(req))) {
    return unauthorized(res, 'You are not authorized to access this db.');
  }
  // express-pouchdb would check the credentials (or session) again against its own
  // (empty) user database; it serves every request as admin party.
  delete req.headers.authorization;
  delete req.headers.cookie;
  return next();
}

// sessions holds the cookies of the sessions opened by POST /_session.
const sessions = new Set();

function sessionCookie(req) {
  const m = /(?:^|;\s*)AuthSession=([^;]*)/.exec(req.headers.cookie || '');
  return m ? m[1] : '';
}

// openSession is CouchDB's cookie login: {name, password} in a JSON body.
function openSession(req, res) {
  const user = process.env.ADMIN_USER;
  const pass = process.env.ADMIN_PASS;
  const body = req.body || {};
  if (user && pass && !(typeof body.name === 'string' && typeof body.password === 'string' &&
      safeEqual(body.name, user) && safeEqual(body.password, pass))) {
    return unauthorized(res, 'Name or password is incorrect.');
  }
  const token = crypto.randomBytes(16).toString('hex');
  sessions.add(token);
  res.set('Set-Cookie', `AuthSession=${token}; Version=1; Path=/; HttpOnly`);
  return res.json({ ok: true, name: body.name || null, roles: ['_admin'] });
}

function safeEqual(a, b) {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && crypto.timingSafeEqual(x, y);
}

function unauthorized(res, reason) {
  res.status(401).json({ error: 'unauthorized', reason });
}

const server = http.createServer((req, res) => {
  inflateRequest(req);
  app(req, res);
});
server.listen(port, host, () => {
  const base = `http://${host}:${server.address().port}/`;
  console.log(`LISTENING ${base}`);
});

function stop() {
  server.close();
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
