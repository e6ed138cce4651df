// Package ftssim is a faithful FTS3 simulator: an http.Handler that speaks
// the FTS3 REST protocol on the wire (submission and its validation,
// deterministic job ids and 409 on a duplicated sid, bulk status with 207
// multi-status, 404 error dictionaries, cancellation, delegation with 419,
// X.509 proxy and bearer-token authentication, HTML middleware errors), and
// simulates the life of each file in time (SUBMITTED, READY, ACTIVE, then
// FINISHED, FAILED or CANCELED), including FTS-side retries of recoverable
// failures, queue expiry and FINISHEDDIRTY aggregation.
//
// Tests start it like httptest (NewServer), drive its clock, inject faults
// (SetHang, Fail503, LoseJob, SetFailureRate, ExpireDelegation) and read back
// every file it ever received (Files, GET /sim/files) to prove that nothing
// was submitted twice. In LocalFiles mode it really copies file:// URLs, so
// a whole pipeline can run offline. NewPKI makes a throw-away CA, server
// certificate, user certificate and RFC 3820 proxy for TLS tests.
//
// Simplifications, each a choice a real server makes by configuration or
// does in ways a client cannot observe: every user is in Options.VO and may
// see every job; bearer tokens are not validated (any, or those in
// Options.Tokens); proxies carry no VOMS attributes; the replica chosen for
// a multi-source file is the first; staging takes QueueDelay; credential
// lifetimes are checked against real time, transfers against the simulated
// clock. Routes: POST|PUT /jobs, GET /jobs, GET|DELETE|POST /jobs/{ids},
// GET /jobs/{id}/files, GET /jobs/{id}/{field}, DELETE
// /jobs/{id}/files/{fids}, GET /jobs/{id}/files/{fid}/retries, GET /whoami,
// GET /, GET|DELETE /delegation/{dlg}, GET /delegation/{dlg}/request, PUT
// /delegation/{dlg}/credential, and GET /sim/files (simulator only, without
// authentication).
//
// It must not import any aso package: it is an independent check of the
// FTS client, written from the FTS3 server's behaviour, not from the client.
// It keeps everything in memory and is not a production server.
package ftssim
