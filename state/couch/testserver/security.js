'use strict';
// Who may do what, as on CouchDB 3 (couch_db:check_is_member and
// check_is_admin, chttpd's require_admin in CouchDB's sources):
//   - server-wide requests (/_all_dbs, /_config, /_active_tasks, ...) and
//     creating or deleting a database need a server admin (the role
//     _admin): 401 "You are not a server admin." otherwise. GET /, /_up,
//     /_session and /_uuids are open to all;
//   - every request to a database needs a member: a server admin, a name
//     or role of the database's _security admins or members, or anyone
//     when the members are empty (a public database). Otherwise 401 "You
//     are not authorized to access this db." for an anonymous user, 403
//     "You are not allowed to access this db." for another;
//   - a new database has the security object of CouchDB 3's
//     default_security = admin_only: admins and members are the role
//     _admin, so that only server admins use it until its _security says
//     otherwise;
//   - a database admin's requests: PUT _security, _index, _compact,
//     _view_cleanup, _purge, _revs_limit, and design documents (checked
//     document by document in validation.js). 401/403 "You are not a db or
//     server admin." otherwise. Update handlers (_update), which write
//     without the writer's user context, are served to admins only.
// The request then reaches express-pouchdb with req.couchSession.userCtx
// {db, name, roles} and req.couchSecurityObj, which it passes to the
// database's methods, and so to validation.js.

const express = require('express');
const { isIn, isDbAdmin } = require('./validation');

const OPEN = new Set(['', '_up', '_session', '_uuids']);

function adminOnly() {
  return { members: { roles: ['_admin'] }, admins: { roles: ['_admin'] } };
}

function deny(res, ctx, reason403, reason401) {
  if (ctx.name === null) {
    return res.status(401).json({ error: 'unauthorized', reason: reason401 || reason403 });
  }
  return res.status(403).json({ error: 'forbidden', reason: reason403 });
}

function isPublic(sec) {
  const m = sec.members || {};
  return !(Array.isArray(m.names) && m.names.length) && !(Array.isArray(m.roles) && m.roles.length);
}

// needsDbAdmin reports whether a request to a database (rest: the path
// segments after its name) is a database admin's.
function needsDbAdmin(method, rest) {
  const first = rest[0] || '';
  switch (first) {
    case '_security':
    case '_revs_limit':
      return method !== 'GET' && method !== 'HEAD';
    case '_index':
      return method === 'POST' || method === 'DELETE';
    case '_compact':
    case '_view_cleanup':
    case '_purge':
      return true;
    case '_design':
      return rest[2] === '_update';
  }
  return false;
}

// badSecurity says what is wrong with a security object ('' if nothing).
function badSecurity(sec) {
  if (!sec || typeof sec !== 'object' || Array.isArray(sec)) return 'the security object must be a JSON object';
  for (const part of ['admins', 'members']) {
    const s = sec[part];
    if (s === undefined) continue;
    if (!s || typeof s !== 'object' || Array.isArray(s)) return `${part} must be a JSON object`;
    for (const f of ['names', 'roles']) {
      if (s[f] !== undefined && (!Array.isArray(s[f]) || s[f].some((x) => typeof x !== 'string'))) {
        return `${part}.${f} must be a JSON list of strings`;
      }
    }
  }
  return '';
}

module.exports = function security() {
  const objects = new Map(); // database name -> security object

  function of(db) {
    return objects.get(db) || adminOnly();
  }

  // guard answers the requests the user may not make and passes the others
  // on with their user context.
  function guard(req, res, next) {
    const ctx = req.userCtx;
    const serverAdmin = ctx.roles.includes('_admin');
    const segs = req.path.split('/').slice(1).map((s) => decodeURIComponent(s));
    const first = segs[0] || '';
    if (OPEN.has(first) || (first.startsWith('_') && first !== '_users')) {
      if (!OPEN.has(first) && !serverAdmin) return res.status(401).json({ error: 'unauthorized', reason: 'You are not a server admin.' });
      return next();
    }
    const rest = segs.slice(1);
    const dbOnly = rest.length === 0 || (rest.length === 1 && rest[0] === '');
    if (dbOnly && (req.method === 'PUT' || req.method === 'DELETE')) {
      if (!serverAdmin) return res.status(401).json({ error: 'unauthorized', reason: 'You are not a server admin.' });
      res.on('finish', () => {
        if (req.method === 'PUT' && (res.statusCode === 201 || res.statusCode === 202)) objects.set(first, adminOnly());
        if (req.method === 'DELETE' && res.statusCode === 200) objects.delete(first);
      });
      return next();
    }
    const sec = of(first);
    const dbAdmin = isDbAdmin(ctx, sec);
    if (!dbAdmin && !isPublic(sec) && !isIn(ctx, sec.members)) {
      return deny(res, ctx, 'You are not allowed to access this db.', 'You are not authorized to access this db.');
    }
    if (!dbAdmin && needsDbAdmin(req.method, rest)) return deny(res, ctx, 'You are not a db or server admin.');
    req.couchSession = { userCtx: { db: first, name: ctx.name, roles: ctx.roles.slice() } };
    req.couchSecurityObj = JSON.parse(JSON.stringify(sec));
    return next();
  }

  function routes(app) {
    app.get('/:db/_security', (req, res) => res.json(of(req.params.db)));
    app.put('/:db/_security', express.json({ type: () => true }), (req, res) => {
      const bad = badSecurity(req.body);
      if (bad) return res.status(400).json({ error: 'bad_request', reason: bad });
      objects.set(req.params.db, req.body);
      return res.json({ ok: true });
    });
  }

  return { guard, routes };
};
