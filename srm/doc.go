// Package srm is aso's storage side: it turns a logical file name (LFN) into
// a physical one (PFN) with a site's trivial-file-catalogue rules, and
// deletes PFNs with the gfal-rm command.
//
// Resolution is pure: a Sites value is loaded once from a sites file,
// validated at load, and then only read. The sites file (YAML or JSON) maps
// each site to the protocol to resolve with and one source of rules:
//
//	T2_US_Nebraska:                 # a CMS storage.xml
//	  protocol: davs
//	  storage-xml: T2_US_Nebraska/storage.xml
//	T1_DE_KIT:                      # a SITECONF storage.json (volume if it lists several)
//	  protocol: WebDAV
//	  storage-json: T1_DE_KIT/storage.json
//	  volume: KIT_MSS
//	T3_XX_Local:                    # inline rules
//	  protocol: file
//	  rules:
//	    - {path-match: /store/(.*), result: file:///data/store/$1}
//
// Rules are evaluated as the CMS software does: the rules of the protocol in
// order; a path-match (a Go regular expression) must match the whole name; a
// rule with a destination-match applies only when it matches the other site
// of the transfer; a chained rule is matched against the result of the chained
// protocol's rules; the result gets $1..$9.
//
// Deletion runs the real gfal-rm in batches, each process with a minimal
// environment and under a deadline, and carries on past the URL it stops at.
//
// The package imports nothing of aso's, does not log, and never touches the
// transfer state: it returns results and errors for its callers to record.
package srm
