package memfile

// compactSuffix names the file a compaction writes beside the store and
// then renames over it.
const compactSuffix = ".compact"

// Files lists the files of the store at path that nothing but the store
// may write: the store itself, and the file its compaction writes and then
// renames over it. aso refuses an output path that names one of them.
func Files(path string) []string { return []string{path, path + compactSuffix} }
