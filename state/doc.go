// Package state holds aso's domain: the transfer document, its states and
// transitions, request validation, and the Store contract that every
// backend implements.
//
// It performs no I/O and imports nothing of aso's: backends (state/couch,
// state/memfile) depend on it, never the other way round. The conformance
// suite in state/statetest states the contract as tests.
package state
