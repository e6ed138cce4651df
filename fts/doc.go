// Package fts is a client of the FTS3 REST API (https://host:8446): it
// authenticates with an X.509 proxy (as TLS client certificate) or an OAuth2
// bearer token, delegates the proxy to the server when needed, submits
// transfer jobs, queries their status in bulk and cancels files. It
// also reads FTS's failure reasons (ParseReason) and maps them to a stable
// vocabulary of error classes with their retry policy (Classify).
//
// Every request runs under its own timeout; transient failures (network
// errors, 5xx, 429) are retried with exponential backoff, client errors are
// not. Errors carry the server's message, never a whole reply body, and never
// a secret (token, key).
//
// The package talks to FTS3 only: it knows nothing of transfer documents or
// the agent, imports nothing of aso, and does not log; callers decide what to
// report.
package fts
