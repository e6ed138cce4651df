'use strict';
// Document validation as CouchDB 3 does it, in place of express-pouchdb's
// pouchdb-validation (couch_db:validate_doc_update in CouchDB's sources):
//   - the revision is checked first: a write whose revision is not a leaf,
//     or that creates a document that exists, is answered 409 whoever makes
//     it, before anything below (CouchDB's prep_and_validate_update;
//     pouchdb-validation validated against the winning revision first, and
//     checked a design document's writer before its revision);
//   - a design document may be written only by a database or server admin
//     ("You are not a db or server admin.": 401 for an anonymous writer,
//     403 for another); validate_doc_update functions do not run for it;
//   - _local documents are not validated;
//   - every other write runs every validate_doc_update function with
//     (newDoc, oldDoc, userCtx, secObj): userCtx is {db, name, roles} of
//     the writer and secObj the database's security object; oldDoc is the
//     revision the write extends (the leaf named by _rev, the parent named
//     by _revisions with new_edits=false, the deleted leaf a document is
//     written over), or null;
//   - throw({forbidden}) is 403 forbidden, throw({unauthorized}) 401
//     unauthorized, anything else 500; inside _bulk_docs each refused
//     document gets its own {id, error, reason}, in the order of the
//     request, and the others are written.
// Writes without a user context are the server's own (an index's design
// document written by _index, which is admin-only) and are not checked.

const crypto = require('crypto');
const coucheval = require('couchdb-eval');
const wrappers = require('pouchdb-wrappers');
const gate = require('./gate');

// refusal is the error PouchDB and express-pouchdb report for a document.
function refusal(status, name, message) {
  const e = new Error(message);
  Object.assign(e, { status, name, message, error: true });
  return e;
}

// isIn is CouchDB's is_authorized: a name or role of the user in a
// section of the security object; the _admin role is in every section.
function isIn(ctx, section) {
  const s = section || {};
  const names = Array.isArray(s.names) ? s.names : [];
  const roles = ['_admin'].concat(Array.isArray(s.roles) ? s.roles : []);
  return (ctx.name !== null && names.includes(ctx.name)) || (ctx.roles || []).some((r) => roles.includes(r));
}

// isDbAdmin: a server admin or an admin of the database.
function isDbAdmin(ctx, secObj) {
  return isIn(ctx, (secObj || {}).admins);
}

// functionsOf returns the compiled validate_doc_update functions of db,
// read once and again after a write of a design document (bulk forgets
// them).
const compiled = new Map(); // design document id + rev -> function
const loaded = new WeakMap(); // database -> its functions
async function functionsOf(db) {
  if (loaded.has(db)) return loaded.get(db);
  const res = await db.allDocs({ startkey: '_design/', endkey: '_design0', include_docs: true });
  const out = [];
  for (const row of res.rows) {
    const ddoc = row.doc;
    if (!ddoc || typeof ddoc.validate_doc_update !== 'string') continue;
    const key = db.name + '\u0000' + ddoc._id + '\u0000' + ddoc._rev;
    if (!compiled.has(key)) compiled.set(key, coucheval.evaluate(ddoc, {}, ddoc.validate_doc_update));
    out.push({ ddoc, fn: compiled.get(key) });
  }
  loaded.set(db, out);
  return out;
}

const CONFLICT = Symbol('conflict');

// leaves returns the leaf revisions of id (deleted ones included).
async function leaves(db, id) {
  try {
    const res = await db.get(id, { open_revs: 'all', revs: true });
    return res.filter((r) => r.ok).map((r) => r.ok);
  } catch (e) {
    if (e && e.status === 404) return [];
    throw e;
  }
}

// replaced keeps the bodies of the last revisions writes replaced: the
// server compacts a revision away once it is no longer a leaf, while
// CouchDB keeps it on disk until its compaction runs, and validates a
// replicated write (new_edits=false) against the nearest ancestor still
// on disk.
const replaced = new Map(); // database \0 id \0 rev -> document
const MAX_REPLACED = 20000;
function remember(db, doc) {
  if (!doc || !doc._rev) return;
  replaced.set(db.name + '\u0000' + doc._id + '\u0000' + doc._rev, doc);
  if (replaced.size > MAX_REPLACED) replaced.delete(replaced.keys().next().value);
}

// oldDocOf returns the revision doc's write extends, null for none, or
// CONFLICT when PouchDB will refuse the write as a conflict.
async function oldDocOf(db, doc, newEdits) {
  if (!newEdits) {
    const r = doc._revisions;
    if (!r || !Array.isArray(r.ids)) return null;
    for (let i = 1; i < r.ids.length; i++) {
      const rev = `${r.start - i}-${r.ids[i]}`;
      try {
        return await db.get(doc._id, { rev, revs: true });
      } catch (e) {
        const kept = replaced.get(db.name + '\u0000' + doc._id + '\u0000' + rev);
        if (kept) return kept;
      }
    }
    return null;
  }
  if (doc._rev) {
    // the write usually extends the winning revision: one read
    const winner = await db.get(doc._id, { revs: true }).catch(() => null);
    if (winner && winner._rev === doc._rev) return winner;
    return (await leaves(db, doc._id)).find((l) => l._rev === doc._rev) || CONFLICT;
  }
  const ls = await leaves(db, doc._id);
  if (ls.some((l) => !l._deleted)) return CONFLICT;
  return ls.length ? ls[ls.length - 1] : null;
}

// check throws the refusal of doc's write by ctx, if any.
async function check(db, doc, opts, fns) {
  const ctx = opts.userCtx;
  const id = String(doc._id);
  if (!ctx || id.startsWith('_local/')) return;
  const design = id.startsWith('_design/');
  if (!design && !fns.length) return;
  // the revision first, as CouchDB's prep_and_validate_update does: a
  // write that conflicts is answered 409 whoever makes it, before the
  // design document's admin check and validate_doc_update
  const old = await oldDocOf(db, doc, opts.new_edits !== false);
  if (old === CONFLICT) return;
  if (design) {
    if (!isDbAdmin(ctx, opts.secObj)) {
      throw ctx.name === null ? refusal(401, 'unauthorized', 'You are not a db or server admin.')
        : refusal(403, 'forbidden', 'You are not a db or server admin.');
    }
    return;
  }
  if (opts.new_edits !== false) remember(db, old);
  const secObj = opts.secObj || {};
  const userCtx = { db: ctx.db, name: ctx.name, roles: (ctx.roles || []).slice() };
  for (const { ddoc, fn } of fns) {
    try {
      fn.call(ddoc, JSON.parse(JSON.stringify(doc)), old, userCtx, secObj);
    } catch (e) {
      if (e && e.unauthorized !== undefined) throw refusal(401, 'unauthorized', String(e.unauthorized));
      if (e && e.forbidden !== undefined) throw refusal(403, 'forbidden', String(e.forbidden));
      throw refusal(500, 'unknown_error', String(e && e.message ? e.message : e));
    }
  }
}

function needsFunctions(docs, opts) {
  return opts.userCtx && docs.some((d) => d && !String(d._id).startsWith('_design/') && !String(d._id).startsWith('_local/'));
}

// PouchDB writes every document through bulkDocs (put, post and remove
// call it), so wrapping it validates them all; attachments are checked
// before they turn into a put.
const handlers = {
  bulkDocs(orig, args) {
    return bulk(orig, args);
  },
  async putAttachment(orig, args) {
    await checkAttachment(args, (doc) => {
      doc._attachments = doc._attachments || {};
      doc._attachments[args.attachmentId] = { content_type: args.type, data: args.doc };
    });
    return orig();
  },
  async removeAttachment(orig, args) {
    await checkAttachment(args, (doc) => {
      if (doc._attachments) delete doc._attachments[args.attachmentId];
    });
    return orig();
  },
};

// bulk validates every document of a _bulk_docs, writes those that pass
// and answers one result per document in the order of the request.
async function bulk(orig, args) {
  const docs = args.docs;
  const opts = args.options;
  const fns = needsFunctions(docs, opts) ? await functionsOf(args.base) : [];
  const results = new Array(docs.length);
  const passed = [];
  const at = [];
  await Promise.all(docs.map(async (doc, i) => {
    if (doc && typeof doc === 'object' && !doc._id) doc._id = crypto.randomUUID().replace(/-/g, '');
    try {
      await check(args.base, doc, opts, fns);
    } catch (e) {
      e.id = doc && doc._id;
      results[i] = e;
    }
  }));
  docs.forEach((doc, i) => {
    if (!results[i]) {
      passed.push(doc);
      at.push(i);
    }
  });
  args.docs = passed;
  if (passed.some((d) => d && String(d._id).startsWith('_design/'))) loaded.delete(args.base);
  // in turn with the view indexes' reads of the changes (gate.js)
  const written = passed.length ? await gate.write(args.base, orig) : [];
  if (passed.some((d) => d && String(d._id).startsWith('_design/'))) loaded.delete(args.base);
  if (opts.new_edits === false || written.length !== passed.length) {
    return results.filter(Boolean).concat(written);
  }
  written.forEach((r, k) => { results[at[k]] = r; });
  return results;
}

// checkAttachment validates the document an attachment write makes.
async function checkAttachment(args, change) {
  const opts = args.options || {};
  if (!opts.userCtx) return;
  let doc = { _id: args.docId };
  if (args.rev) {
    try {
      doc = await args.base.get(args.docId, { rev: args.rev, revs: true });
    } catch (e) {
      // missing: the write fails by itself
    }
  }
  const newDoc = JSON.parse(JSON.stringify(doc));
  change(newDoc);
  const fns = needsFunctions([newDoc], opts) ? await functionsOf(args.base) : [];
  await check(args.base, newDoc, opts, fns);
}

// install registers the validation with express-pouchdb's database
// wrapper, so that every database it opens validates its writes.
module.exports = function install(app) {
  app.dbWrapper.registerWrapper((name, db, next) => {
    wrappers.installWrapperMethods(db, handlers);
    return next();
  });
};
module.exports.isIn = isIn;
module.exports.isDbAdmin = isDbAdmin;
