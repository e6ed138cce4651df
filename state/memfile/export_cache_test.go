package memfile

// Every test of the package runs with the cache's hits checked against
// the file (checkHits).
func init() { checkHits = true }
