// Package serve is aso's read-only web view of a state store: a status
// page that says where each transfer is and why it is not done yet, a JSON
// API behind every page in the shapes of the command line's --json, and
// fleet-wide Prometheus metrics.
//
// It never writes to the store. What every page and scrape reads of the
// whole fleet comes from a bounded number of queries (state.Admin.Counts
// and the run locks), cached for a few seconds, so that the cost of a
// page or a scrape does not grow with the number of users or transfers,
// and several Prometheus servers cost no more than one.
package serve
