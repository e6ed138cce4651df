// Package verify checks that aso's records are true: it reads the size and
// adler32 checksum of what is at the destination of ended transfers, with
// the real gfal-stat and gfal-sum (srm.Inspector), a bounded number at a
// time, each call under a deadline, and says of each transfer whether its
// file is present, missing, differs or could not be read. Each result is
// written into the transfer's history (state.VerifyOf), one store call
// per batch, replacing the previous verification's entry.
//
// The package does not log and does not read flags: aso verify (cmd/)
// builds a Verifier, hands it the pages of the transfers its filters
// select, and prints what Report is given.
package verify
