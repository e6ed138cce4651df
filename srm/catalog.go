package srm

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Bounds on the work one resolution may do. RE2 matching is linear in the
// input, so bounding the input and the number of regular expression
// evaluations bounds the time.
const (
	// MaxLFNLength is the longest LFN ResolveFor accepts, in bytes.
	MaxLFNLength = 4096
	// MaxPFNLength is the longest result (final or intermediate, after a
	// chain) a catalogue may produce, in bytes.
	MaxPFNLength = 8192
	// maxEvaluations bounds the regular expression evaluations of one
	// resolution, chains included.
	maxEvaluations = 2000
)

// ruleSource is a rule as written in a catalogue, before compilation.
type ruleSource struct {
	Where            string // e.g. "rule 3" or "storage.xml line 12", for messages
	Protocol         string
	PathMatch        string
	Result           string
	Chain            string
	DestinationMatch string
}

// rule is a compiled lfn-to-pfn rule.
type rule struct {
	src       ruleSource
	pathMatch *regexp.Regexp
	destMatch *regexp.Regexp // nil: any destination
}

// catalog is one site's compiled rules, grouped by protocol in file order.
type catalog struct {
	site      string
	protocol  string // the preferred protocol
	byProto   map[string][]*rule
	protocols []string // in order of first appearance, for messages
	tokens    bool     // the storage takes storage tokens
	tokenBase string   // their scopes' base path
}

// compileFull compiles expr so that it must match the whole input, as the
// CMS software does (std::regex_match): catalogues anchor their own patterns
// and a rule for /store/... must not fire on /foo/store/....
func compileFull(expr string) (*regexp.Regexp, error) {
	return regexp.Compile(`^(?:` + expr + `)$`)
}

// newCatalog compiles and checks the rules of a site: every regular
// expression compiles, every $N in a result names a group, every chain names
// a protocol with rules, chains do not loop, and the preferred protocol has
// rules.
func newCatalog(site, protocol string, srcs []ruleSource) (*catalog, error) {
	c := &catalog{site: site, protocol: protocol, byProto: map[string][]*rule{}}
	bad := func(s ruleSource, format string, args ...any) error {
		return fmt.Errorf("site %s: %s (protocol %q, path-match %q): %s: %w",
			site, s.Where, s.Protocol, s.PathMatch, fmt.Sprintf(format, args...), ErrBadCatalog)
	}
	for _, s := range srcs {
		switch {
		case s.Protocol == "":
			return nil, bad(s, "missing protocol")
		case s.PathMatch == "":
			return nil, bad(s, "missing path-match")
		case s.Result == "":
			return nil, bad(s, "missing result")
		}
		r := &rule{src: s}
		var err error
		if r.pathMatch, err = compileFull(s.PathMatch); err != nil {
			return nil, bad(s, "path-match: %v", err)
		}
		if s.DestinationMatch != "" {
			if r.destMatch, err = compileFull(s.DestinationMatch); err != nil {
				return nil, bad(s, "destination-match %q: %v", s.DestinationMatch, err)
			}
		}
		if n := maxGroupRef(s.Result); n > r.pathMatch.NumSubexp() {
			return nil, bad(s, "result %q uses $%d but path-match has %d groups", s.Result, n, r.pathMatch.NumSubexp())
		}
		if _, ok := c.byProto[s.Protocol]; !ok {
			c.protocols = append(c.protocols, s.Protocol)
		}
		c.byProto[s.Protocol] = append(c.byProto[s.Protocol], r)
	}
	for _, p := range c.protocols {
		for _, r := range c.byProto[p] {
			if r.src.Chain != "" && len(c.byProto[r.src.Chain]) == 0 {
				return nil, bad(r.src, "chain names protocol %q, which has no rules", r.src.Chain)
			}
		}
	}
	if err := c.checkLoops(bad); err != nil {
		return nil, err
	}
	if len(c.byProto[protocol]) == 0 {
		return nil, fmt.Errorf("site %s: preferred protocol %q has no rules (protocols with rules: %s): %w",
			site, protocol, strings.Join(c.protocols, ", "), ErrBadCatalog)
	}
	return c, nil
}

// checkLoops rejects chains that lead back to a protocol already on the path.
func (c *catalog) checkLoops(bad func(ruleSource, string, ...any) error) error {
	const (
		unseen = iota
		onPath
		done
	)
	mark := map[string]int{}
	var visit func(p string, path []string) error
	visit = func(p string, path []string) error {
		mark[p] = onPath
		path = append(path, p)
		for _, r := range c.byProto[p] {
			next := r.src.Chain
			if next == "" {
				continue
			}
			switch mark[next] {
			case onPath:
				i := slices.Index(path, next)
				loop := append(slices.Clone(path[i:]), next)
				return bad(r.src, "chain loop %s", strings.Join(loop, " -> "))
			case unseen:
				if err := visit(next, path); err != nil {
					return err
				}
			}
		}
		mark[p] = done
		return nil
	}
	for _, p := range c.protocols {
		if mark[p] == unseen {
			if err := visit(p, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxGroupRef returns the largest N of the $N (N in 1..9) in a result.
func maxGroupRef(result string) int {
	n := 0
	for i := 0; i+1 < len(result); i++ {
		if result[i] == '$' && result[i+1] >= '1' && result[i+1] <= '9' {
			n = max(n, int(result[i+1]-'0'))
		}
	}
	return n
}

// expand substitutes $1..$9 in result with the groups of m; a group that
// did not participate is empty. Any other '$' is literal.
func expand(result string, m []string) string {
	var b strings.Builder
	for i := 0; i < len(result); i++ {
		if result[i] == '$' && i+1 < len(result) && result[i+1] >= '1' && result[i+1] <= '9' {
			if g := int(result[i+1] - '0'); g < len(m) {
				b.WriteString(m[g])
			}
			i++
			continue
		}
		b.WriteByte(result[i])
	}
	return b.String()
}

// resolution is the state of one resolution: the destination every rule's
// destination-match is evaluated against, the work budget, and the outcome
// of each chained protocol (chains always apply to the original name).
type resolution struct {
	dest  string
	evals int
	memo  map[string]chained
}

type chained struct {
	pfn string
	ok  bool
}

// applyChain is apply for a chained protocol, remembered per resolution.
func (c *catalog) applyChain(res *resolution, protocol, name string) (string, bool, error) {
	if m, ok := res.memo[protocol]; ok {
		return m.pfn, m.ok, nil
	}
	pfn, ok, err := c.apply(res, protocol, name)
	if err == nil {
		if res.memo == nil {
			res.memo = map[string]chained{}
		}
		res.memo[protocol] = chained{pfn, ok}
	}
	return pfn, ok, err
}

// apply applies the rules of protocol to name. Rules are tried in order;
// a rule applies if its destination-match (if any) matches the destination
// and its path-match matches the whole of its input: name, or for a chained
// rule the result of first applying the chained protocol's rules to name (as
// WMCore and Rucio read catalogues). The first rule that applies gives the
// result, its template with $1..$9 replaced by the groups of the match. ok
// is false if no rule applies; an error means the catalogue asks for too
// much work or too long a result.
func (c *catalog) apply(res *resolution, protocol, name string) (pfn string, ok bool, err error) {
	for _, r := range c.byProto[protocol] {
		if res.evals += 2; res.evals > maxEvaluations {
			return "", false, fmt.Errorf("more than %d rule evaluations; simplify the catalogue", maxEvaluations)
		}
		if r.destMatch != nil && !r.destMatch.MatchString(res.dest) {
			continue
		}
		in := name
		if r.src.Chain != "" {
			out, ok, err := c.applyChain(res, r.src.Chain, name)
			if err != nil {
				return "", false, err
			}
			if !ok {
				continue
			}
			in = out
		}
		m := r.pathMatch.FindStringSubmatch(in)
		if m == nil {
			continue
		}
		out := expand(r.src.Result, m)
		if len(out) > MaxPFNLength {
			return "", false, fmt.Errorf("%s (protocol %q) gives a result of %d bytes, more than %d",
				r.src.Where, protocol, len(out), MaxPFNLength)
		}
		return out, true, nil
	}
	return "", false, nil
}
