package srm

import (
	"fmt"
	"net/url"
	"path"
	"strings"
)

// Storage tokens: a site whose entry in the sites file says
//
//	tokens: true
//	token-base: /eos/cms   # optional, default /
//
// takes WLCG storage tokens. A transfer reading from it needs a token
// with the scope storage.read:<dir>, one writing to it storage.modify:<dir>,
// where <dir> is the directory of the file's PFN path relative to the
// token base: davs://eos.example.org:443/eos/cms/store/user/a/f.root with
// base /eos/cms gives storage.read:/store/user/a. Tokens are scoped to the
// directory, not the file, so that the files of one task share a token.

// setTokens records spec's token settings on c.
func setTokens(c *catalog, spec siteSpec) error {
	if spec.TokenBase != "" && !spec.Tokens {
		return fmt.Errorf("site %s: token-base is only meaningful with tokens: true: %w", c.site, ErrBadCatalog)
	}
	if !spec.Tokens {
		return nil
	}
	base := spec.TokenBase
	if base == "" {
		base = "/"
	}
	if !strings.HasPrefix(base, "/") || path.Clean(base) != base {
		return fmt.Errorf("site %s: token-base %q: want a clean absolute path such as /eos/cms: %w", c.site, base, ErrBadCatalog)
	}
	c.tokens, c.tokenBase = true, base
	return nil
}

// TokenScope returns the storage-token scope a transfer needs at site for
// the file at pfn: storage.modify (write) or storage.read, on the file's
// directory relative to the site's token base. ok is false when the site
// takes no tokens. An error says why pfn cannot be scoped (not a URL, or
// outside the token base).
func (s *Sites) TokenScope(site, pfn string, write bool) (scope string, ok bool, err error) {
	c := s.sites[site]
	if c == nil || !c.tokens {
		return "", false, nil
	}
	u, err := url.Parse(pfn)
	if err != nil || u.Path == "" {
		return "", true, fmt.Errorf("srm: site %s: no path in PFN %q for a token scope", site, pfn)
	}
	p := path.Clean("/" + strings.TrimLeft(u.Path, "/"))
	rel, inside := strings.CutPrefix(p, c.tokenBase)
	if c.tokenBase == "/" {
		rel, inside = p, true
	}
	if !inside || (rel != "" && !strings.HasPrefix(rel, "/")) {
		return "", true, fmt.Errorf("srm: site %s: PFN path %s is outside the token base %s", site, p, c.tokenBase)
	}
	dir := path.Dir("/" + strings.TrimPrefix(rel, "/"))
	op := "storage.read:"
	if write {
		op = "storage.modify:"
	}
	return op + dir, true, nil
}
