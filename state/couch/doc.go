// Package couch is the CouchDB backend of aso's state store (kivik v4). It
// keeps one document per transfer plus one run-lock document per user, and
// implements state.Store with bulk requests only: _find against Mango
// indexes to select, _bulk_docs to write, and POST _all_docs?keys= to
// re-read after revision conflicts, so every call costs one or a few HTTP
// requests per batch, never one per transfer.
//
// Transition rules come from package state (state.Claim, state.CommitTo,
// ...), so the semantics match every other backend. Init creates the
// database, the Mango indexes and a design document whose
// validate_doc_update function rejects malformed transfers and illegal
// transitions server-side.
//
// Claim order. Mango sorts only in one direction, but NewTransfers wants
// priority descending then oldest last_update first. Every write therefore
// maintains a derived field, claim_key, present only while a transfer is new
// or acquired: the 10-digit inverted priority (MaxInt32 - priority), the
// fixed-width last_update and the ID, so that ascending claim_key order is
// the claim order. The "aso-claim" index on (user, claim_key) holds exactly
// the candidates; eligibility in time (retry_after, lease_expires) is a
// selector condition evaluated by the server.
//
// Other calls: ActiveTransfers queries the "aso-active" index (user, state,
// last_update), List the "aso-created" index (type, created), both paged
// with limit and skip. Summary, an operator's command, pages through
// _all_docs: it must see every document to report the invalid ones. A
// document that does not decode and validate as a transfer is skipped by
// every call and listed in Summary.Invalid. The run lock of a user is the
// document lock:<user> {type: "lock", user, holder, expire}, written
// revision-checked; a released lock has no expire (the zero time).
//
// Conflicts: a write whose _bulk_docs item conflicts is re-read with POST
// _all_docs?keys= and the rule applied again (bounded, with backoff); an
// item whose stored document equals the body written is a write whose
// answer was lost, and succeeds. Claims that conflict are re-read once and
// otherwise skipped; progress updates are never re-applied. A per-document
// refusal counts as a validation failure only when the re-read shows the
// revision did not move: the PouchDB test server validates against the
// newest revision before it checks the one sent, and answers refused
// documents out of order (results are matched by ID).
//
// The package uses only what both Apache CouchDB 3.x and the PouchDB-based
// test server support: plain Mango indexes, _find with limit and skip (no
// bookmarks), _bulk_docs, _all_docs with keys, validate_doc_update. It must
// not log, read the environment or hold credentials anywhere but the HTTP
// client; every URL it puts in an error goes through Redact.
package couch
