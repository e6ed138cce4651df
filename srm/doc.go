// Package srm is aso's storage side: it turns a logical file name (LFN) into
// a physical one (PFN) with a site's trivial-file-catalogue rules, and
// deletes PFNs with the gfal-rm command.
//
// Resolution is pure: a Sites value is loaded once from a sites file (which
// may point at CMS storage.xml or storage.json catalogues), validated at load,
// and then only read. Deletion runs the real gfal-rm in batches, each process
// with a minimal environment and under a deadline.
//
// The package imports nothing of aso's, does not log, and never touches the
// transfer state: it returns results and errors for its callers to record.
package srm
