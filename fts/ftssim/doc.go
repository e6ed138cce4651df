// Package ftssim is a faithful FTS3 simulator: an http.Handler that speaks
// the FTS3 REST protocol on the wire as a real fts-rest-flask 3.13 server
// answers (submission and its validation, deterministic job ids and 409 on a
// duplicated sid, bulk status with 207 multi-status, 404 and 403 error
// entries, per-identity authorization, cancellation, delegation with 419,
// X.509 proxies (plain or VOMS) and, with OAuth2 enabled, bearer tokens,
// double-slash URLs, HTML middleware errors and Apache's 500 page while the
// database is down), and simulates the life of each file in time
// (SUBMITTED, READY, ACTIVE, then FINISHED, FAILED or CANCELED), including
// FTS-side retries by FTS's recoverable rules for failure reasons in real
// format, queue expiry and FINISHEDDIRTY aggregation.
//
// aso fts-sim serves it, aso run --fts local starts it in-process, and tests
// start it with fts/ftstest.NewServer, drive its clock, inject faults
// (SetHang, Fail503, FailDatabase, SetDatabaseDown, LoseJob,
// SetFailureRate, ExpireDelegation) and read back every file it ever
// received (Files, GET /sim/files) to prove that nothing was submitted
// twice. In LocalFiles mode it really copies file:// URLs, so a whole
// pipeline can run offline. Its tests make their throw-away CA, server
// certificate, user certificate and RFC 3820 proxies (plain or VOMS)
// with fts/ftstest.NewPKI.
//
// Where it still differs from a real server (no transfer daemon, random
// failures, tokens and VOMS signatures not validated, jobs private to their
// submitter, everything in memory) is listed in docs/simulator.md. Routes: POST|PUT /jobs, GET /jobs, GET|DELETE|POST
// /jobs/{ids}, GET /jobs/{id}/files, GET /jobs/{id}/dm, GET
// /jobs/{id}/{field}, DELETE /jobs/{id}/files/{fids}, GET
// /jobs/{id}/files/{fid}/retries, GET /whoami, GET /, GET|DELETE
// /delegation/{dlg}, GET /delegation/{dlg}/request, PUT
// /delegation/{dlg}/credential, and GET /sim/files (simulator only, without
// authentication); repeated slashes count as one.
//
// It must import no aso package, so that it stays an independent check of
// the FTS client, written from the FTS3 server's behaviour, and no testing
// package, since the aso binary ships it. It keeps everything in memory and
// is not a production server.
package ftssim
