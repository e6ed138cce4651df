// Package memfile is the file-backed state store: every durable call is
// made durable in one local file before it returns. It serves offline use
// (one machine, no CouchDB) and tests.
//
// Memory holds an index: per transfer a small record without pointers
// (its ID in binary, state, user and sites interned, priority, times, FTS
// job) and where its current version lies in the file, about 200 bytes a
// transfer. A call that needs whole transfers takes them from a bounded
// cache of the versions this handle last wrote or read (docCache, keyed by
// where the version lies in the file), or reads them back with pread,
// neighbours in one read, and decodes them. The file is never mapped: it
// is read through bounded buffers, so the resident memory does not grow
// with its size.
//
// The file is JSON lines: a header, then documents (a snapshot written by
// compaction, one document a line, editable by hand), then journal records,
// each a batch header {"batch":N,"bytes":L,"crc32c":"..."} followed by the N
// full new documents of one bulk call. A call appends one record and fsyncs
// it, so a commit costs O(batch), not O(queue); compaction rewrites the file
// (temp file, fsync, rename, fsync of the directory) once the journal has
// grown to twice the snapshot; reading a file decodes only the last version
// of each document, so a long journal costs little at open. Several handles and several processes may
// share a file: each operation holds an flock on it, first catches up on the
// records others appended, then appends its own.
//
// Every document carries a revision "N-suffix", N growing by one per write,
// as in CouchDB. Because operations are serialised by the file lock, a write
// is always applied to the latest stored version, after the rule of package
// state for that call has checked it again: exactly what a CouchDB backend
// does after a revision conflict, so a stale revision only matters where the
// contract says so (SetTransientState reports ErrConflict).
//
// A torn last record (a crash in the middle of an append) is dropped with a
// warning; any other damage is an error naming the file and line. A last
// line added by hand without its newline is kept, and the line ended. A document
// that does not validate as a transfer is kept in the file but skipped by
// every call and reported by Summary.
//
// Store holds the contract's calls and delegates them: its file handle
// runs each as one operation under the file lock; the journal is the file
// as read, with db, the index of what it holds; a tx stages one
// operation's writes; claimer claims and query answers the calls that
// only read. The design document (docs/design.md, the file store) maps
// which type owns which state.
//
// The package implements state.Store with the pure rules of package state
// and must not add rules of its own: its semantics are those of the CouchDB
// backend, as proven by state/statetest. It does not log.
package memfile
