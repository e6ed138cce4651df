'use strict';
// Users and sessions as CouchDB 3.5 has them (couch_users_db,
// couch_httpd_auth, couch_passwords_cache in CouchDB's sources):
//   - the server admin is ADMIN_USER/ADMIN_PASS, with the role _admin;
//   - the other users are the documents org.couchdb.user:NAME of the _users
//     database (which, as on CouchDB 3, exists once an admin creates it).
//     A password written into one is replaced by its PBKDF2 hash before it
//     is stored: password_scheme "pbkdf2", pbkdf2_prf "sha256", a random
//     salt, 600,000 iterations (or PBKDF2_ITERATIONS, as CouchDB's
//     [chttpd_auth] iterations sets them), derived_key; its roles are the
//     user's roles;
//   - HTTP basic auth, or the AuthSession cookie of POST /_session
//     ({name, password}, JSON or a form). A wrong name or password is 401
//     "Name or password is incorrect."; no credentials at all is the
//     anonymous user {name: null, roles: []}. A verified password is
//     remembered by a fast hash (5 iterations), as CouchDB's cache of
//     password verifications does, so that basic auth on every request
//     does not cost the full iterations each time; a session ends when the
//     user's password changes (a new salt);
//   - GET /_session answers {ok, userCtx: {name, roles}, info}; DELETE
//     /_session ends the cookie's session.
// The _users database is the admin's: other users can neither read nor
// write it (CouchDB lets a user read and update their own document).

const crypto = require('crypto');
const express = require('express');
const { promisify } = require('util');

const pbkdf2 = promisify(crypto.pbkdf2);

const USERS = '_users';
const PREFIX = 'org.couchdb.user:';
// CouchDB 3.5's [chttpd_auth] iterations by default; PBKDF2_ITERATIONS sets
// it as that setting does (the tests use fewer: each new user's password
// costs this many iterations twice, once to store and once to verify)
const ITERATIONS = Number(process.env.PBKDF2_ITERATIONS || 600000);
const PRF = 'sha256'; // and pbkdf2_prf
const FAST_ITERATIONS = 5;

function safeEqual(a, b) {
  const x = Buffer.from(String(a));
  const y = Buffer.from(String(b));
  return x.length === y.length && crypto.timingSafeEqual(x, y);
}

function unauthorized(res, reason) {
  res.status(401).json({ error: 'unauthorized', reason });
}

function forbidden(res, reason) {
  res.status(403).json({ error: 'forbidden', reason });
}

// hashPassword turns doc.password into CouchDB's stored fields.
async function hashPassword(doc) {
  const salt = crypto.randomBytes(16).toString('hex');
  const key = await pbkdf2(doc.password, salt, ITERATIONS, 32, PRF);
  for (const f of ['password', 'password_sha', 'password_scheme', 'pbkdf2_prf', 'salt', 'iterations', 'derived_key']) {
    delete doc[f];
  }
  Object.assign(doc, { password_scheme: 'pbkdf2', pbkdf2_prf: PRF, salt, iterations: ITERATIONS, derived_key: key.toString('hex') });
}

// userDocError is what _users' validation says of a user document
// (CouchDB's _design/_auth), or '' for a good one.
function userDocError(doc) {
  if (!doc || typeof doc !== 'object') return 'doc must be an object';
  if (doc._deleted === true) return '';
  if (doc.type !== 'user') return 'doc.type must be user';
  if (typeof doc.name !== 'string' || doc.name === '') return 'doc.name is required';
  if (!Array.isArray(doc.roles)) return 'doc.roles must be an array';
  if (doc.roles.some((r) => typeof r !== 'string' || r.startsWith('_'))) return 'roles must be strings, none starting with _';
  if (doc._id !== PREFIX + doc.name) return 'Doc ID must be of the form org.couchdb.user:name';
  return '';
}

// users returns the authentication of the server: self(method, path) reads
// the server's own documents as its admin.
module.exports = function users(adminUser, adminPass, self) {
  const docs = new Map(); // user name -> its document (null: none), until _users changes
  const verified = new Map(); // user name + salt -> fast hash of the password
  const sessions = new Map(); // cookie -> {name, salt}

  async function userDoc(name) {
    if (docs.has(name)) return docs.get(name);
    const { status, body } = await self('GET', `/${USERS}/${encodeURIComponent(PREFIX + name)}`);
    const doc = status === 200 ? body : null;
    docs.set(name, doc);
    return doc;
  }

  function fast(pass, salt) {
    return crypto.pbkdf2Sync(pass, salt, FAST_ITERATIONS, 32, 'sha256').toString('hex');
  }

  // login returns the userCtx of name and pass, or null.
  async function login(name, pass) {
    if (adminUser && safeEqual(name, adminUser)) {
      return safeEqual(pass, adminPass) ? { name, roles: ['_admin'], salt: null } : null;
    }
    const doc = await userDoc(name);
    if (!doc || doc.password_scheme !== 'pbkdf2' || typeof doc.derived_key !== 'string' || typeof doc.salt !== 'string') return null;
    const key = name + '\u0000' + doc.salt;
    const ok = verified.has(key)
      ? safeEqual(verified.get(key), fast(pass, doc.salt))
      : safeEqual((await pbkdf2(pass, doc.salt, doc.iterations, doc.derived_key.length / 2, doc.pbkdf2_prf || 'sha1')).toString('hex'), doc.derived_key);
    if (!ok) return null;
    verified.set(key, fast(pass, doc.salt));
    return { name, roles: Array.isArray(doc.roles) ? doc.roles.slice() : [], salt: doc.salt };
  }

  // sessionOf returns the userCtx of a session cookie, or null.
  async function sessionOf(token) {
    const s = token && sessions.get(token);
    if (!s) return null;
    if (s.salt === null) return { name: s.name, roles: ['_admin'] };
    const doc = await userDoc(s.name);
    if (!doc || doc.salt !== s.salt) {
      sessions.delete(token);
      return null;
    }
    return { name: s.name, roles: doc.roles.slice() };
  }

  function cookieOf(req) {
    const m = /(?:^|;\s*)AuthSession=([^;]*)/.exec(req.headers.cookie || '');
    return m ? m[1] : '';
  }

  // authenticate sets req.userCtx ({name, roles}) and req.authenticated.
  async function authenticate(req, res, next) {
    try {
      const m = /^Basic\s+(.+)$/i.exec(req.headers.authorization || '');
      if (m) {
        const text = Buffer.from(m[1], 'base64').toString('utf8');
        const i = text.indexOf(':');
        const ctx = i < 0 ? null : await login(text.slice(0, i), text.slice(i + 1));
        if (!ctx) return unauthorized(res, 'Name or password is incorrect.');
        req.userCtx = { name: ctx.name, roles: ctx.roles };
        req.authenticated = 'default';
      } else {
        const ctx = await sessionOf(cookieOf(req));
        req.userCtx = ctx || { name: null, roles: [] };
        if (ctx) req.authenticated = 'cookie';
      }
      // express-pouchdb must not authenticate again: it serves the request
      // with the user context set here (see security.js)
      delete req.headers.authorization;
      delete req.headers.cookie;
      return next();
    } catch (e) {
      return next(e);
    }
  }

  async function openSession(req, res) {
    const b = req.body || {};
    const ctx = typeof b.name === 'string' && typeof b.password === 'string' ? await login(b.name, b.password) : null;
    if (!ctx) return unauthorized(res, 'Name or password is incorrect.');
    const token = crypto.randomBytes(16).toString('hex');
    sessions.set(token, { name: ctx.name, salt: ctx.salt });
    res.set('Set-Cookie', `AuthSession=${token}; Version=1; Path=/; HttpOnly`);
    return res.json({ ok: true, name: ctx.name, roles: ctx.roles });
  }

  // usersWrites hashes the passwords of user documents written to _users
  // and checks their form.
  async function usersWrites(req, res, next, path) {
    const b = req.body;
    const bulk = path === `/${USERS}/_bulk_docs`;
    const list = bulk ? (b && Array.isArray(b.docs) ? b.docs : []) : [b];
    try {
      for (const d of list) {
        if (d && typeof d === 'object' && !bulk && req.method === 'PUT' && !d._id) {
          d._id = decodeURIComponent(path.slice(USERS.length + 2));
        }
        if (d && typeof d === 'object' && /^_(design|local)\//.test(String(d._id))) continue;
        const bad = userDocError(d);
        if (bad) return forbidden(res, bad);
        if (typeof d.password === 'string') await hashPassword(d);
      }
    } catch (e) {
      return next(e);
    }
    return next();
  }

  function routes(app) {
    app.get('/_session', (req, res) => {
      const info = { authentication_handlers: ['cookie', 'default'] };
      if (req.authenticated) info.authenticated = req.authenticated;
      res.json({ ok: true, userCtx: req.userCtx, info });
    });
    app.delete('/_session', (req, res) => {
      sessions.delete(req.sessionCookie);
      res.set('Set-Cookie', 'AuthSession=; Version=1; Path=/; HttpOnly');
      res.json({ ok: true });
    });
    // a write to _users forgets the cached user documents
    const jsonBody = express.json({ limit: '16mb', type: () => true });
    app.use((req, res, next) => {
      const path = req.path;
      if (path !== `/${USERS}` && !path.startsWith(`/${USERS}/`)) return next();
      if (req.method === 'GET' || req.method === 'HEAD') return next();
      docs.clear();
      if (path === `/${USERS}` || (req.method !== 'PUT' && req.method !== 'POST')) return next();
      return jsonBody(req, res, (err) => (err ? next(err) : usersWrites(req, res, next, path)));
    });
  }

  // openSessionRoute serves POST /_session (before authenticate: a wrong
  // basic auth header must not stop a login).
  function openSessionRoute(app) {
    app.post('/_session', express.urlencoded({ extended: false }), express.json({ type: () => true }), openSession);
  }

  // keepCookie notes the request's session cookie (before authenticate
  // removes the header) for DELETE /_session.
  function keepCookie(req, res, next) {
    req.sessionCookie = cookieOf(req);
    next();
  }

  return { authenticate, routes, keepCookie, openSessionRoute };
};
