package agent

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
)

// ExperimentCMS is CMS's experiment id in scitags.
const ExperimentCMS = 3

// Scitag is the scitag of a file: experiment << 6 | activity.
func Scitag(activity int) int { return ExperimentCMS<<6 | activity }

// StorageTokens gives storage tokens by scope (*tokens.Source).
type StorageTokens interface {
	Token(ctx context.Context, scope string) (string, error)
}

// TokenScoper says which sites take storage tokens, and the scope a file
// needs there (*srm.Sites). A Resolver without it takes none.
type TokenScoper interface {
	TokenScope(site, pfn string, write bool) (scope string, ok bool, err error)
}

// ErrStorageToken marks a submission that could not get its storage
// tokens: not the transfers' fault, so they are released without penalty
// and Run stops with an error wrapping it (a person must act: configure a
// token source, renew the token, start the token agent).
var ErrStorageToken = errors.New("storage token")

// planner turns transfers into FTS jobs: it resolves their PFNs, groups
// them by link and priority, and builds the submissions, with their
// storage tokens and scitags.
type planner struct {
	cfg   Config
	sites Resolver
}

func newPlanner(cfg Config, sites Resolver) *planner { return &planner{cfg: cfg, sites: sites} }

// job is a group of transfers submitted together: one link, one FTS
// priority, at most MaxFilesPerJob files.
type job struct {
	files []planned
	prio  int // FTS's 1..5
}

// jobKey groups transfers into FTS jobs: one link, one FTS priority; solo
// is the ID of a transfer sent in a job of its own.
type jobKey struct {
	src, dst string
	prio     int
	solo     string
}

// ftsPriority maps a transfer priority (any integer, 0 = normal) to FTS's 1..5 (3 = normal).
func ftsPriority(p int) int {
	return max(1, min(5, 3+p))
}

// plan groups transfers by link and priority, resolves their PFNs, and
// splits them into jobs of at most MaxFilesPerJob files, a transfer in
// solo in a job of its own. A transfer whose PFNs cannot be resolved is
// aborted, and one whose PFNs name one file (srm.SameFile, through any pair
// of sites) fails at once: it is never sent to FTS.
func (p *planner) plan(ts []state.Transfer, solo map[string]bool) ([]job, []state.Abort) {
	groups := map[jobKey][]planned{}
	var aborts []state.Abort
	for _, t := range ts {
		src, err := p.sites.ResolveFor(t.Source, t.SourceLFN, t.Destination)
		if err == nil {
			var dst string
			dst, err = p.sites.ResolveFor(t.Destination, t.DestinationLFN, t.Destination)
			if err == nil && srm.SameFile(src, dst) {
				aborts = append(aborts, state.Abort{Transfer: t, Fatal: true, ErrorClass: string(state.ClassSameFile),
					Reason: fmt.Sprintf("source and destination are one file (%s at %s, %s at %s: %s): not submitted, it would overwrite its own source",
						t.SourceLFN, t.Source, t.DestinationLFN, t.Destination, dst)})
				continue
			}
			if err == nil {
				k := jobKey{t.Source, t.Destination, ftsPriority(t.Priority), ""}
				if solo[t.ID] {
					k.solo = t.ID
				}
				groups[k] = append(groups[k], planned{id: t.ID, src: src, dst: dst})
				continue
			}
		}
		aborts = append(aborts, state.Abort{Transfer: t, Reason: "cannot resolve PFN: " + err.Error()})
	}
	keys := make([]jobKey, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.prio != b.prio {
			return a.prio > b.prio
		}
		if a.src != b.src {
			return a.src < b.src
		}
		if a.dst != b.dst {
			return a.dst < b.dst
		}
		return a.solo < b.solo
	})
	var jobs []job
	for _, k := range keys {
		g := groups[k]
		for len(g) > 0 {
			n := min(len(g), p.cfg.MaxFilesPerJob)
			jobs = append(jobs, job{files: g[:n:n], prio: k.prio})
			g = g[n:]
		}
	}
	return jobs, aborts
}

// submission is the FTS submission of j's files among held, under sid,
// with their storage tokens.
func (p *planner) submission(ctx context.Context, j job, sid string, held map[string]state.Transfer) (fts.Submission, error) {
	toks, err := p.tokens(ctx, j, held)
	if err != nil {
		return fts.Submission{}, err
	}
	verify := fts.VerifyNone
	if p.cfg.VerifyChecksum {
		verify = fts.VerifyBoth
	}
	s := fts.Submission{Params: fts.SubmitParams{
		VerifyChecksum:  verify,
		Overwrite:       p.cfg.Overwrite,
		Retry:           p.cfg.FTSRetry,
		RetryDelay:      p.cfg.FTSRetryDelay,
		Priority:        j.prio,
		MaxTimeInQueue:  p.cfg.MaxTimeInQueue,
		JobMetadata:     map[string]string{"issuer": "aso", "agent": p.cfg.Owner, "user": p.cfg.User},
		IDGenerator:     "deterministic",
		SID:             sid,
		UnmanagedTokens: p.cfg.UnmanagedTokens && len(toks) > 0,
	}}
	s.Files = make([]fts.SubmitFile, 0, len(j.files))
	for _, f := range j.files {
		t, ok := held[f.id]
		if !ok {
			continue
		}
		sf := fts.SubmitFile{
			Sources: []string{f.src}, Destinations: []string{f.dst},
			Filesize: t.Size, Activity: p.cfg.Activity,
			Metadata: map[string]string{"transfer_id": t.ID, "user": t.User},
		}
		if ck := t.Checksum(); ck != "" {
			sf.Checksum = "ADLER32:" + ck
		}
		tk, has := toks[t.ID]
		p.markFile(&sf, t.Activity, tk, has)
		s.Files = append(s.Files, sf)
	}
	return s, nil
}

// tokens returns the storage tokens of j's files among held, transfer ID
// -> {source, destination}; nil when no file needs one.
func (p *planner) tokens(ctx context.Context, j job, held map[string]state.Transfer) (map[string][2]string, error) {
	scoper, ok := p.sites.(TokenScoper)
	if !ok {
		return nil, nil
	}
	type need struct{ id, src, dst string }
	var needs []need
	site := [2]string{"?", "?"}
	for _, f := range j.files {
		t, ok := held[f.id]
		if !ok {
			continue
		}
		site = [2]string{t.Source, t.Destination}
		src, sok, err := scoper.TokenScope(t.Source, f.src, false)
		if err == nil {
			var dok bool
			var dst string
			dst, dok, err = scoper.TokenScope(t.Destination, f.dst, true)
			if sok || dok {
				needs = append(needs, need{f.id, src, dst})
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrStorageToken, err)
		}
	}
	if len(needs) == 0 {
		return nil, nil
	}
	if p.cfg.StorageTokens == nil {
		return nil, fmt.Errorf("%w: a site of link %s->%s takes storage tokens, and no token file or command is configured (--storage-token-file, --storage-token-command)",
			ErrStorageToken, site[0], site[1])
	}
	out := make(map[string][2]string, len(needs))
	for _, n := range needs {
		var pair [2]string
		for k, scope := range []string{n.src, n.dst} {
			if scope == "" {
				// FTS wants both lists: a site without tokens gets the
				// other end's token, which it ignores
				scope = n.src + n.dst
			}
			tok, err := p.cfg.StorageTokens.Token(ctx, scope)
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrStorageToken, err)
			}
			pair[k] = tok
		}
		out[n.id] = pair
	}
	return out, nil
}

// markFile sets the scitag and storage tokens of one file of a submission.
func (p *planner) markFile(sf *fts.SubmitFile, activity int, toks [2]string, has bool) {
	if activity == 0 {
		activity = p.cfg.ScitagActivity
	}
	if activity > 0 {
		sf.Scitag = Scitag(activity)
	}
	if has {
		sf.SourceTokens, sf.DestinationTokens = []string{toks[0]}, []string{toks[1]}
	}
}
