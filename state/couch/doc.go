// Package couch is the CouchDB backend of aso's state store (kivik v4). It
// keeps one document per transfer plus one run-lock document per user, and
// implements state.Store with bulk requests only: a view (and for List a
// Mango index) to select, _bulk_docs to write, and POST _all_docs?keys= to
// read documents by ID, so every call costs one or a few HTTP requests per
// batch, never one per transfer.
//
// Transition rules come from package state (state.Claim, state.CommitTo,
// ...), so the semantics match every other backend. Init creates the
// database, its _security members, the view, the Mango index of List and a
// design document whose validate_doc_update function rejects malformed
// transfers, illegal transitions and writes the writer's role does not
// allow, server-side; it deletes the Mango indexes of earlier versions.
//
// The view. The agent's two queries read one view, "work" in the design
// document _design/aso-views (work_map.js), so that a server keeps a
// single index up to date for both; both CouchDB and PouchDB answer a key
// range with a limit from the index's B-tree without reading the rest.
//
// Claim order. The view computes the order of the queue from each
// document's own fields, so that a transfer document another producer wrote
// is claimed like one aso wrote: the 10-digit inverted priority (MaxInt32 -
// priority), last_update as 18 digits of microseconds and the ID, so that
// ascending order is the claim order (priority descending, then oldest
// last_update, then ID). The view has a row [user, "queue", order] per new
// or acquired transfer whose value is the time it may be claimed
// (retry_after or lease_expires). NewTransfers reads these rows from the
// head of the queue, the first page with the documents and their conflicts
// (include_docs; on a cluster, which would read them from one replica,
// without), passes over those not due, and reads by ID the documents of
// the due ones its rows did not bring; the next round starts after the
// last key read. A due document that does not validate is moved to
// failed in the same _bulk_docs as the claims, its reason naming the field.
//
// The same design document holds the views of the per-user commands:
// "user" ([user, state, created, _id], see user_map.js) and "conflicts"
// ([user, _id] of the documents with conflicting revisions), and "users"
// counts each user's transfers by kind, finished ones included.
//
// Fields aso does not know (a producer's task name, job ID, ...) are kept
// in state.Transfer.Extra and written back on every write.
//
// Active transfers. The view has a row [user, "active", fts_job] per
// submitted transfer whose value is its last_update; reduced by _stats and
// grouped, it gives each job's number of transfers and oldest update in
// one request (ActiveJobs), and the rows of a set of jobs with
// include_docs give their transfers (ActiveTransfersOf). ActiveTransfers is
// the two, a page of jobs at a time. List pages through the "aso-created"
// Mango index (type, created), or for the queue of one user through the
// queue rows. Summary, an operator's command, pages through _all_docs: it
// must see every document to report the invalid ones. A document that does
// not decode and validate as a transfer is skipped by every call and listed
// in Summary.Invalid. The run lock of a user is the document lock:<user>
// {type: "lock", user, holder, expire}, written revision-checked; a
// released lock has no expire (the zero time).
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
// A CouchDB cluster (see conflicts.go, locker.go, nodes.go): a _bulk_docs
// answered 202 Accepted stored some documents on fewer replicas than the
// write quorum. The run lock is held only on a 201 (a 202 releases the
// revision written and counts as locked); other writes answered 202 count
// once a re-read shows the revision written as the document's only leaf
// not yet set aside. Reads by ID ask for conflicts, and an agent's store
// resolves the conflicted transfers of its user by fixed rules, writing
// the result on CouchDB's winner and setting the other leaves aside
// (superseded_revs); ResolveConflicts, an operator's, deletes them.
// Several node URLs may be given: a request that fails on one node is
// tried again on the next, as a retry of the same request (retryHTTP).
//
// Roles (roles.go): Init makes aso's roles the database's members, and
// validate_doc_update enforces what each writes (aso-producer,
// aso-user, aso-agent, aso-operator, aso-reader; see validate.js).
// EnsureAccounts creates the users of the roles; WhoAmI says who a
// credential is.
// The store remembers the transfers it claimed and reads them by ID for
// the agent's drain check (state.Confirmer), since views lag.
//
// The package uses only what both Apache CouchDB 3.x and the PouchDB-based
// test server support: JavaScript views with the built-in _stats reduce,
// plain Mango indexes, _find with limit and skip (no bookmarks),
// _bulk_docs, _all_docs with keys, _bulk_get, validate_doc_update. It must
// not log, read the environment or hold credentials anywhere but the HTTP
// client; every URL it puts in an error goes through Redact.
package couch
