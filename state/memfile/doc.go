// Package memfile is the file-backed memory store: the transfers sit
// decoded in memory, and every durable call is made durable in one local
// file, as an appended, checksummed record, before it returns. It serves
// offline use (one machine, no CouchDB) and tests.
//
// Memory holds the current version of every document of the file, decoded
// (db: transfers by ID, invalid documents, run locks), and per user the
// index the agent's calls read (userIndex: the queue in claim order, the
// submitted transfers by FTS job). A read is a loop over them with the
// rules of package state (db_query.go); a call's result is a copy.
//
// The file is JSON lines: a header, then records. A record is a header
// line {"batch":N,"bytes":L,"crc32c":"...","hcrc":"..."} followed by N
// document lines, L bytes long in total: crc32c is the CRC-32C of those
// bytes, hcrc that of the header line before it, so that a header is
// checked before the length it gives is believed. A call appends one
// journal record ("batch") holding the full new documents it wrote, and
// fsyncs it. Compaction writes the current documents to a new file, one
// snapshot record ("snapshot") per document, fsyncs it, renames it over
// the file and fsyncs the directory, once the journal has grown past both
// Options.CompactBytes and twice the snapshot. Several handles and
// several processes may share a file: each operation holds an flock on it,
// first catches up on the records others appended, then appends its own.
// A file of format 1 (documents outside records, unchecked) is read, and
// rewritten in format 2 by the first handle that may write it.
//
// Damage is never silent. A journal record cut short at the end of the
// file, what a crash during an append leaves (a short tail, or zeros: see
// reader.incomplete), is dropped with a warning (Options.Warn); anything
// else that does not check out, a complete record whose checksum fails
// included, is an error wrapping ErrDamaged that names the file, line and
// offset of the record, and nothing is written to the file. Check lists
// the damage and Salvage writes what can be read into a new file. A
// document that does not validate as a transfer is kept in the file but
// skipped by every call and reported by Summary.
//
// Every document carries a revision "N-suffix", N growing by one per write,
// as in CouchDB. Because operations are serialised by the file lock, a write
// is always applied to the latest stored version, after the rule of package
// state for that call has checked it again: exactly what a CouchDB backend
// does after a revision conflict, so a stale revision only matters where the
// contract says so (SetTransientState reports ErrConflict).
//
// Store holds the contract's calls and delegates them: its file handle
// runs each as one operation under the file lock (file.go), appends and
// compacts (file_write.go); a tx stages one operation's writes; claimer
// claims; reader reads records and decides what is torn and what is
// damage; fsck reads past damage. The design document (docs/design.md,
// the file store) maps which type owns which state.
//
// The package implements state.Store with the pure rules of package state
// and must not add rules of its own: its semantics are those of the CouchDB
// backend, as proven by state/statetest. It does not log.
package memfile
