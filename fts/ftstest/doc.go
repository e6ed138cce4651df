// Package ftstest is the test face of the FTS3 simulator of package
// fts/ftssim: NewServer starts one for a test, like httptest.NewServer, and
// NewPKI and NewProxy make throw-away grid credentials that fail the test
// on error. Every other name is an alias of ftssim's, so tests may use
// either package.
//
// It imports testing and must only be imported by tests and test
// programs, never by the aso binary (which uses ftssim directly).
package ftstest
