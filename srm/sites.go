package srm

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// maxFileSize bounds a sites file and every catalogue it names.
const maxFileSize = 16 << 20

// Sites holds the compiled LFN-to-PFN rules of every site of a sites file.
// It is immutable once loaded and safe for concurrent use.
type Sites struct {
	sites map[string]*catalog
}

// siteSpec is one site's entry in a sites file: a preferred protocol and
// exactly one source of rules.
type siteSpec struct {
	Protocol    string     `json:"protocol"`
	Rules       []ruleSpec `json:"rules,omitempty"`
	StorageXML  string     `json:"storage-xml,omitempty"`
	StorageJSON string     `json:"storage-json,omitempty"`
	// Volume selects the entry of a storage.json that lists several.
	Volume string `json:"volume,omitempty"`
	// Tokens: the site's storage takes WLCG storage tokens, which each
	// file of a submission carries (see TokenScope).
	Tokens bool `json:"tokens,omitempty"`
	// TokenBase is the storage's token base path: scopes name paths
	// relative to it. Default "/".
	TokenBase string `json:"token-base,omitempty"`
}

// ruleSpec is an inline rule; an empty protocol means the site's protocol.
type ruleSpec struct {
	Protocol         string `json:"protocol,omitempty"`
	PathMatch        string `json:"path-match"`
	Result           string `json:"result"`
	Chain            string `json:"chain,omitempty"`
	DestinationMatch string `json:"destination-match,omitempty"`
}

// LoadSites reads a sites file (YAML or JSON) mapping each site name to
// {protocol, rules | storage-xml | storage-json [, volume]}. Catalogue paths
// are relative to the sites file's directory. Every rule is checked: an
// error names the site and the rule, and wraps ErrBadCatalog.
func LoadSites(path string) (*Sites, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, fmt.Errorf("srm: sites file: %w", err)
	}
	s, err := parseSites(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("srm: sites file %s: %w", path, err)
	}
	return s, nil
}

// ParseSites parses the contents of a sites file; relative catalogue paths
// are taken relative to baseDir.
func ParseSites(data []byte, baseDir string) (*Sites, error) {
	s, err := parseSites(data, baseDir)
	if err != nil {
		return nil, fmt.Errorf("srm: sites file: %w", err)
	}
	return s, nil
}

func parseSites(data []byte, baseDir string) (*Sites, error) {
	var specs map[string]siteSpec
	if err := yaml.UnmarshalStrict(data, &specs); err != nil {
		return nil, fmt.Errorf("%v: %w", err, ErrBadCatalog)
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("no sites: want a map of site name to {protocol, rules|storage-xml|storage-json}: %w", ErrBadCatalog)
	}
	s := &Sites{sites: make(map[string]*catalog, len(specs))}
	for _, name := range slices.Sorted(maps.Keys(specs)) {
		c, err := buildSite(name, specs[name], baseDir)
		if err != nil {
			return nil, err
		}
		s.sites[name] = c
	}
	return s, nil
}

// buildSite reads a site's rules from wherever its entry says and compiles them.
func buildSite(name string, spec siteSpec, baseDir string) (*catalog, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("site %s: %s: %w", name, fmt.Sprintf(format, args...), ErrBadCatalog)
	}
	if strings.TrimSpace(name) == "" {
		return nil, bad("empty site name")
	}
	if spec.Protocol == "" {
		return nil, bad("missing protocol (the protocol to resolve with, e.g. davs)")
	}
	sources := 0
	for _, set := range []bool{len(spec.Rules) > 0, spec.StorageXML != "", spec.StorageJSON != ""} {
		if set {
			sources++
		}
	}
	if sources != 1 {
		return nil, bad("want exactly one of rules, storage-xml and storage-json, have %d", sources)
	}
	if spec.Volume != "" && spec.StorageJSON == "" {
		return nil, bad("volume is only meaningful with storage-json")
	}
	var srcs []ruleSource
	switch {
	case len(spec.Rules) > 0:
		for i, r := range spec.Rules {
			p := r.Protocol
			if p == "" {
				p = spec.Protocol
			}
			srcs = append(srcs, ruleSource{
				Where: fmt.Sprintf("rule %d", i+1), Protocol: p, PathMatch: r.PathMatch,
				Result: r.Result, Chain: r.Chain, DestinationMatch: r.DestinationMatch,
			})
		}
	case spec.StorageXML != "":
		path := catalogPath(baseDir, spec.StorageXML)
		data, err := readBounded(path)
		if err != nil {
			return nil, bad("storage-xml: %v", err)
		}
		if srcs, err = parseStorageXML(data, filepath.Base(path)); err != nil {
			return nil, bad("%v", err)
		}
	default:
		path := catalogPath(baseDir, spec.StorageJSON)
		data, err := readBounded(path)
		if err != nil {
			return nil, bad("storage-json: %v", err)
		}
		if srcs, err = parseStorageJSON(data, filepath.Base(path), name, spec.Volume); err != nil {
			return nil, bad("%v", err)
		}
	}
	c, err := newCatalog(name, spec.Protocol, srcs)
	if err != nil {
		return nil, err
	}
	return c, setTokens(c, spec)
}

func catalogPath(baseDir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(baseDir, p)
}

// readBounded reads a file of at most maxFileSize bytes.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxFileSize)
	}
	return data, nil
}

// Names returns the site names, sorted.
func (s *Sites) Names() []string {
	return slices.Sorted(maps.Keys(s.sites))
}

// ResolveFor turns lfn into the site's PFN with the site's preferred
// protocol. Errors are *ResolveError wrapping ErrUnknownSite, ErrNoMatch,
// ErrBadLFN or ErrBadCatalog. Every rule's destination-match is evaluated
// against destination, the transfer's destination site, for its source
// PFN and its destination PFN alike: PhEDEx, which defined
// destination-match for transfers, evaluates it against the destination
// node for both ends.
func (s *Sites) ResolveFor(site, lfn, destination string) (string, error) {
	c, ok := s.sites[site]
	if !ok {
		return "", &ResolveError{Site: site, LFN: lfn, Reason: "the sites file does not name this site", err: ErrUnknownSite}
	}
	fail := func(reason string, err error) (string, error) {
		return "", &ResolveError{Site: site, Protocol: c.protocol, LFN: lfn, Reason: reason, err: err}
	}
	if reason := checkLFN(lfn); reason != "" {
		return fail(reason, ErrBadLFN)
	}
	pfn, ok, err := c.apply(&resolution{dest: destination}, c.protocol, lfn)
	switch {
	case err != nil:
		return fail(err.Error(), ErrBadCatalog)
	case !ok && destination != "":
		return fail(fmt.Sprintf("no lfn-to-pfn rule matches (destination %q)", destination), ErrNoMatch)
	case !ok:
		return fail("no lfn-to-pfn rule matches", ErrNoMatch)
	}
	return pfn, nil
}

// checkLFN returns why lfn is unacceptable, or "".
func checkLFN(lfn string) string {
	switch {
	case lfn == "":
		return "empty LFN"
	case len(lfn) > MaxLFNLength:
		return fmt.Sprintf("LFN of %d bytes is longer than %d", len(lfn), MaxLFNLength)
	case strings.ContainsFunc(lfn, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "LFN contains a control character"
	}
	return ""
}

// Schemes returns, sorted, the URL schemes of the PFNs the sites' preferred
// protocols produce (the scheme of each such rule's result, lower case), so
// a caller can check that gfal2 can delete at every site. A result that
// starts with a group ($1...) has no scheme of its own and adds none.
func (s *Sites) Schemes() []string {
	set := map[string]bool{}
	for _, c := range s.sites {
		for _, r := range c.byProto[c.protocol] {
			if m := urlScheme.FindString(r.src.Result); m != "" {
				scheme, _, _ := strings.Cut(m, ":")
				set[strings.ToLower(scheme)] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}
