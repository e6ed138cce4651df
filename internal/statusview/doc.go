// Package statusview builds what `aso status` and `aso serve` show of the
// store, in the JSON shapes both print: the summary of `aso status
// --json`, one transfer of `aso status ID --json` with its dependencies,
// the run locks and the failure reasons. The command line and the web
// server use these types and builders, so that the same question gets
// the same numbers in the same shape from both.
package statusview
