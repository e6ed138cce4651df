'use strict';
// The map/reduce views of the test server, in place of pouchdb-mapreduce.
//
// pouchdb-mapreduce keeps each view in a PouchDB database of its own: for
// every changed document it reads and rewrites index documents through
// PouchDB's revision machinery, and it maps each document in a new V8
// context (about 3 ms each). Keeping a view of 10,000 transfers up to date
// took seconds per batch of writes. Here a view is a sorted in-memory
// index (a red-black tree keyed by pouchdb-collate's indexable strings, in
// CouchDB collation order), brought up to date from the changes feed
// before each query together with the other views of its design document,
// as CouchDB does; each function is compiled once into
// a context of its own and each document handed to it as JSON, as couchjs
// does.
//
// Supported: GET and POST _view with startkey/endkey (start_key/end_key),
// key, keys, inclusive_end, descending, limit, skip, include_docs (and
// conflicts with it), reduce, group, group_level, update (true, false:
// answer from the index as it is, lazy: answer so, then bring it up to
// date) and the older stale (ok, update_after), the built-in reduce
// functions _sum, _count and _stats
// (numbers) and JavaScript reduce functions (called once per group, without
// rereduce). Not supported: startkey_docid/endkey_docid, update_seq,
// _view_cleanup (a no-op). Unlike CouchDB 3, nothing brings an index up to
// date in the background between queries.

const vm = require('vm');
const createTree = require('functional-red-black-tree');
const { collate, normalizeKey, toIndexableString } = require('pouchdb-collate');
const gate = require('./gate');

// --- functions -----------------------------------------------------------

// The globals CouchDB gives view functions (log is a no-op here).
const prelude = `"use strict";
var log = function () {};
var isArray = Array.isArray;
var toJSON = JSON.stringify;
var sum = function (values) {
  var s = 0;
  for (var i = 0; i < values.length; i++) s += values[i];
  return s;
};
`;

const compiled = new Map(); // source -> function (emit, argsJSON)

// compile returns source as a function of its own context, called with an
// emit callback and its arguments as a JSON array.
function compile(source) {
  let f = compiled.get(source);
  if (f) return f;
  const code = `${prelude}
var __emit__ = null;
var emit = function (key, value) { __emit__(key, value); };
var __fun__ = (${source.replace(/;\s*$/, '')});
(function (emitTo, argsJSON) {
  __emit__ = emitTo;
  try {
    return __fun__.apply(null, JSON.parse(argsJSON));
  } finally {
    __emit__ = null;
  }
})`;
  f = vm.runInNewContext(code);
  compiled.set(source, f);
  return f;
}

function queryError(status, name, message) {
  const err = new Error(message);
  err.status = status;
  err.name = name;
  err.error = name;
  err.reason = message;
  return err;
}

function numbers(name, values) {
  for (const v of values) {
    if (typeof v !== 'number') {
      throw queryError(500, 'builtin_reduce_error', `builtin ${name} function requires map values to be numbers`);
    }
  }
  return values;
}

const builtIns = {
  _sum: (keys, values) => numbers('_sum', values).reduce((a, b) => a + b, 0),
  _count: (keys, values) => values.length,
  _stats: (keys, values) => {
    numbers('_stats', values);
    let sum = 0;
    let sumsqr = 0;
    let min = Infinity;
    let max = -Infinity;
    for (const v of values) {
      sum += v;
      sumsqr += v * v;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    return { sum, min, max, count: values.length, sumsqr };
  },
};

function reducer(source) {
  const builtIn = /^\s*(_[a-z]+)/.exec(source);
  if (builtIn) {
    if (!builtIns[builtIn[1]]) throw queryError(400, 'query_parse_error', `${source} is not a supported reduce function`);
    return builtIns[builtIn[1]];
  }
  const f = compile(source);
  return (keys, values) => f(null, JSON.stringify([keys, values, false]));
}

// --- indexes -------------------------------------------------------------

// changesPage is how many changes a read of the changes feed takes.
const changesPage = 1000;

// A view's index: rows {key, id, value} in a tree keyed by the indexable
// string of [key, id, n], and the tree keys of each document.
class ViewIndex {
  constructor(map) {
    this.map = compile(map);
    this.tree = createTree();
    this.byDoc = new Map();
  }

  // reindex replaces the rows of the document of change by those its map
  // function emits for docJSON, the document as a one-element JSON array
  // (null: the document is deleted).
  reindex(change, docJSON) {
    for (const k of this.byDoc.get(change.id) || []) {
      this.tree = this.tree.remove(k);
    }
    this.byDoc.delete(change.id);
    if (docJSON === null) return;
    const id = change.id;
    const emitted = [];
    try {
      this.map((key, value) => emitted.push([normalizeKey(key), value === undefined ? null : normalizeKey(value)]), docJSON);
    } catch (e) {
      return; // CouchDB skips a document whose map function throws
    }
    const keys = emitted.map(([key, value], n) => {
      const k = toIndexableString([key, id, n]);
      this.tree = this.tree.insert(k, { key, id, value });
      return k;
    });
    if (keys.length) this.byDoc.set(id, keys);
  }

  // range returns the rows between the keys start and end (undefined: no
  // bound), in order.
  range(start, end, inclusiveEnd, descending) {
    const rows = [];
    if (!descending) {
      const lo = start === undefined ? null : toIndexableString([start]);
      const hi = end === undefined ? null : toIndexableString(inclusiveEnd ? [end, {}] : [end]);
      for (let it = lo === null ? this.tree.begin : this.tree.ge(lo); it.valid; it.next()) {
        if (hi !== null && (inclusiveEnd ? it.key > hi : it.key >= hi)) break;
        rows.push(it.value);
      }
    } else {
      const hi = start === undefined ? null : toIndexableString([start, {}]);
      const lo = end === undefined ? null : toIndexableString(inclusiveEnd ? [end] : [end, {}]);
      for (let it = hi === null ? this.tree.end : this.tree.le(hi); it.valid; it.prev()) {
        if (lo !== null && (inclusiveEnd ? it.key < lo : it.key <= lo)) break;
        rows.push(it.value);
      }
    }
    return rows;
  }
}

// The indexes of the views of one design document, brought up to date
// together from one read of the changes, as CouchDB keeps a design
// document's views in one index group: a query of one view brings every
// view of its design document up to date, and each document is read from
// the changes and handed to the map functions once for them all.
class ViewGroup {
  constructor(maps) {
    this.views = new Map([...maps].map(([name, map]) => [name, new ViewIndex(map)]));
    this.seq = 0; // the last sequence of the changes feed applied
    this.queue = Promise.resolve(); // updates and queries, one at a time
  }

  // update applies the changes of db since the last update. A read of the
  // changes takes turns with the writes of db (gate.js), so that it passes
  // over no document written while it goes on; a read that ends before its
  // limit has therefore every write that completed before it began, and a
  // query answers with every write that completed before it was asked, as
  // CouchDB's does, without chasing the writes that come while it reads.
  async update(db) {
    for (;;) {
      // with their _conflicts, which CouchDB gives map functions
      const res = await gate.read(db, () => db.changes({ since: this.seq, include_docs: true, conflicts: true, limit: changesPage, return_docs: true }));
      for (const change of res.results) {
        if (change.id[0] === '_') continue;
        const doc = change.doc;
        const docJSON = change.deleted || !doc || doc._deleted ? null : JSON.stringify([doc]);
        for (const v of this.views.values()) v.reindex(change, docJSON);
      }
      this.seq = res.last_seq;
      if (res.results.length < changesPage) return;
    }
  }
}

const groups = new WeakMap(); // db -> Map(design document name -> {signature, group})

// groupOf returns the index group of the design document ddoc of db, new
// if its views' map functions changed (CouchDB's index signature).
function groupOf(db, ddocName, ddoc) {
  let byName = groups.get(db);
  if (!byName) {
    byName = new Map();
    groups.set(db, byName);
  }
  const maps = Object.keys(ddoc.views).sort()
    .filter((name) => ddoc.views[name] && typeof ddoc.views[name].map === 'string')
    .map((name) => [name, ddoc.views[name].map]);
  const signature = JSON.stringify(maps);
  let g = byName.get(ddocName);
  if (!g || g.signature !== signature) {
    g = { signature, group: new ViewGroup(maps) };
    byName.set(ddocName, g);
  }
  return g.group;
}

// --- queries -------------------------------------------------------------

function option(opts, a, b) {
  return opts[a] !== undefined ? opts[a] : opts[b];
}

function integer(opts, name) {
  const v = opts[name];
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw queryError(400, 'query_parse_error', `Invalid value for positive integer: "${v}"`);
  return n;
}

function reduceRows(rows, reduce, opts) {
  const level = opts.group ? Infinity : integer(opts, 'group_level') || 0;
  const groups = [];
  for (const row of rows) {
    let gk = null;
    if (level > 0) gk = Array.isArray(row.key) && level !== Infinity ? row.key.slice(0, level) : row.key;
    const last = groups[groups.length - 1];
    if (last && collate(last.key, gk) === 0) {
      last.keys.push([row.key, row.id]);
      last.values.push(row.value);
    } else {
      groups.push({ key: gk, keys: [[row.key, row.id]], values: [row.value] });
    }
  }
  if (!groups.length && level === 0) groups.push({ key: null, keys: [], values: [] });
  return groups.map((g) => ({ key: g.key, value: reduce(g.keys, g.values) }));
}

// updateMode returns when a query brings the index up to date ('true':
// before answering, 'false': not, 'lazy': after answering), from update or
// else stale, refusing other values as CouchDB does.
function updateMode(opts) {
  if (opts.update !== undefined) {
    const v = String(opts.update);
    if (v === 'true' || v === 'false' || v === 'lazy') return v;
    throw queryError(400, 'query_parse_error', 'Invalid value for `update`.');
  }
  if (opts.stale !== undefined) {
    const v = String(opts.stale);
    if (v === 'ok') return 'false';
    if (v === 'update_after') return 'lazy';
    throw queryError(400, 'query_parse_error', 'Invalid value for `stale`.');
  }
  return 'true';
}

async function run(db, group, index, def, opts, mode) {
  if (mode === 'true') await group.update(db);
  const shouldReduce = def.reduce && opts.reduce !== false && opts.reduce !== 'false';
  const descending = opts.descending === true;
  const inclusiveEnd = opts.inclusive_end !== false;
  let rows;
  if (opts.keys !== undefined) {
    rows = [];
    for (const k of opts.keys) rows.push(...index.range(k, k, true, descending));
  } else if (opts.key !== undefined) {
    rows = index.range(opts.key, opts.key, true, descending);
  } else {
    rows = index.range(option(opts, 'startkey', 'start_key'), option(opts, 'endkey', 'end_key'), inclusiveEnd, descending);
  }
  const skip = integer(opts, 'skip') || 0;
  const limit = integer(opts, 'limit');
  const cut = (list) => list.slice(skip, limit === undefined ? undefined : skip + limit);
  if (shouldReduce) {
    if (opts.include_docs) throw queryError(400, 'query_parse_error', '{include_docs:true} is invalid for reduce');
    return { rows: cut(reduceRows(rows, reducer(def.reduce), opts)) };
  }
  const total = index.tree.length;
  const out = cut(rows).map((r) => ({ id: r.id, key: r.key, value: r.value }));
  if (opts.include_docs && out.length) {
    // one get per document: about three times as fast as allDocs with
    // keys, which opens a read stream per key
    // (with conflicts=true, their _conflicts, as CouchDB gives them)
    const ids = [...new Set(out.map((r) => r.id))];
    const get = opts.conflicts === true || opts.conflicts === 'true' ? { conflicts: true } : {};
    const docs = new Map(await Promise.all(ids.map((id) => db.get(id, get).then((d) => [id, d], () => [id, null]))));
    for (const r of out) r.doc = docs.get(r.id);
  }
  return { total_rows: total, offset: skip, rows: out };
}

async function query(db, fun, opts) {
  if (typeof fun !== 'string' || fun.indexOf('/') < 0) {
    throw queryError(400, 'query_parse_error', 'only views of design documents are supported');
  }
  const [ddocName, viewName] = fun.split('/');
  let ddoc;
  try {
    ddoc = await db.get(`_design/${ddocName}`);
  } catch (e) {
    throw queryError(404, 'not_found', 'missing');
  }
  const def = ddoc.views && ddoc.views[viewName];
  if (!def || typeof def.map !== 'string') throw queryError(404, 'not_found', 'missing_named_view');
  opts = opts || {};
  const mode = updateMode(opts);
  const group = groupOf(db, ddocName, ddoc);
  const index = group.views.get(viewName);
  const result = group.queue.then(() => run(db, group, index, def, opts, mode));
  group.queue = result.catch(() => {});
  if (mode === 'lazy') group.queue = group.queue.then(() => group.update(db)).catch(() => {});
  return result;
}

module.exports = {
  query(fun, opts, callback) {
    if (typeof opts === 'function') {
      callback = opts;
      opts = {};
    }
    const promise = query(this, fun, opts);
    if (callback) promise.then((res) => callback(null, res), callback);
    return promise;
  },
  viewCleanup(callback) {
    const promise = Promise.resolve({ ok: true });
    if (callback) promise.then((res) => callback(null, res), callback);
    return promise;
  },
};
