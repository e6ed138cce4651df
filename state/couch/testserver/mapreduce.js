'use strict';
// The map/reduce views of the test server: pouchdb-mapreduce with its
// functions compiled once. pouchdb-mapreduce builds a new V8 context for
// every document it maps (about 3 ms each), so that indexing 10,000
// transfers took half a minute; here each function of a design document is
// compiled once into a context of its own, and each document is handed to
// it as JSON, so that the function sees objects of its own context and
// cannot change the stored document, as with CouchDB's couchjs.
// The built-in reduce functions are pouchdb-mapreduce's (_sum, _count,
// _stats).

const vm = require('vm');
const createAbstractMapReduce = require('pouchdb-abstract-mapreduce');
const { BuiltInError, NotFoundError } = require('pouchdb-mapreduce-utils');

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

function mapper(mapFun, emit) {
  const f = compile(mapFun.toString());
  return (doc) => f(emit, JSON.stringify([doc]));
}

function builtInError(name) {
  return new BuiltInError(`builtin ${name} function requires map values to be numbers`);
}

function numbers(name, values) {
  for (const v of values) {
    if (typeof v !== 'number') throw builtInError(name);
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

function reducer(reduceFun) {
  const source = reduceFun.toString();
  const builtIn = /^_[a-z]+/.exec(source);
  if (builtIn) {
    if (!builtIns[builtIn[0]]) throw new Error(`${source} is not a supported reduce function.`);
    return builtIns[builtIn[0]];
  }
  const f = compile(source);
  return (keys, values, rereduce) => f(null, JSON.stringify([keys, values, rereduce]));
}

function ddocValidator(ddoc, viewName) {
  const fun = ddoc.views && ddoc.views[viewName];
  if (typeof fun.map !== 'string') {
    throw new NotFoundError(`ddoc ${ddoc._id} has no string view named ${viewName}, instead found object of type: ${typeof fun.map}`);
  }
}

const abstract = createAbstractMapReduce('mrviews', mapper, reducer, ddocValidator);

module.exports = {
  query(fun, opts, callback) {
    return abstract.query.call(this, fun, opts, callback);
  },
  viewCleanup(callback) {
    return abstract.viewCleanup.call(this, callback);
  },
};
