'use strict';
// The writes of a database and the reads of its changes by the view
// indexes (mapreduce.js) take turns: a read of the changes waits for the
// writes under way to end, and holds back the writes that come while it
// waits or reads.
//
// A read of PouchDB's changes walks a snapshot of the sequence index but
// looks each document's latest sequence up as it goes, and passes over a
// document written again since the snapshot (its entry there is no
// longer the document's latest, and its new one is not in the snapshot).
// Without turns an index could only be sure it had every write that
// completed before a query by reading the changes until a read found none,
// which under a steady stream of writes (several agents writing while one
// queries) chases the writes for as long as they come. With turns a read
// misses nothing, so a read that ends before its limit has every write
// that completed before it began, as CouchDB's index has every write that
// completed before the query. The price is that a write waits for a read
// under way, and a read for the writes under way: the server is
// single-threaded, so the work is the same, only its order changes.

const gates = new Map(); // database name -> {writers, readers, waiting, wake}

function gateOf(db) {
  let g = gates.get(db.name);
  if (!g) {
    g = { writers: 0, readers: 0, waiting: 0, wake: [] };
    gates.set(db.name, g);
  }
  return g;
}

function wait(g) {
  return new Promise((resolve) => g.wake.push(resolve));
}

function wakeAll(g) {
  const w = g.wake;
  g.wake = [];
  for (const resolve of w) resolve();
}

// write runs fn, a write of db, when no read of its changes is under way
// or waiting.
async function write(db, fn) {
  const g = gateOf(db);
  while (g.readers > 0 || g.waiting > 0) await wait(g);
  g.writers++;
  try {
    return await fn();
  } finally {
    g.writers--;
    wakeAll(g);
  }
}

// read runs fn, a read of db's changes, when no write of db is under way.
async function read(db, fn) {
  const g = gateOf(db);
  g.waiting++;
  try {
    while (g.writers > 0) await wait(g);
  } finally {
    g.waiting--;
  }
  g.readers++;
  try {
    return await fn();
  } finally {
    g.readers--;
    wakeAll(g);
  }
}

module.exports = { read, write };
