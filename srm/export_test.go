package srm

// Internal entry points for the tests of package srm_test.

// RunOutput is runOutput, for tests of InterpretRun.
type RunOutput = runOutput

// InterpretRun is interpretRun.
var InterpretRun = interpretRun

// SitesFromStorageXML compiles a storage.xml as the catalogue of a site
// named "T" that resolves with protocol.
func SitesFromStorageXML(data []byte, protocol string) (*Sites, error) {
	srcs, err := parseStorageXML(data, "storage.xml")
	if err != nil {
		return nil, err
	}
	c, err := newCatalog("T", protocol, srcs)
	if err != nil {
		return nil, err
	}
	return &Sites{sites: map[string]*catalog{"T": c}}, nil
}
