package couch

// ClaimQuery exposes the NewTransfers query to the tests (for _explain).
var ClaimQuery = claimQuery
