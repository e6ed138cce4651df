package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/asyncstageout/aso/fts"
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

// fileTokens returns the storage tokens of j's files, transfer ID ->
// {source, destination}; nil when no file needs one. The tokens are
// fetched outside the ledger's lock (a command may take seconds).
func (a *Agent) fileTokens(ctx context.Context, j *pendingJob) (map[string][2]string, error) {
	scoper, ok := a.sites.(TokenScoper)
	if !ok {
		return nil, nil
	}
	type need struct{ id, src, dst string }
	var needs []need
	held := a.book.byID(j.ids)
	for _, f := range j.files {
		t, ok := held[f.id]
		if !ok {
			continue
		}
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
	if a.cfg.StorageTokens == nil {
		return nil, fmt.Errorf("%w: a site of link %s->%s takes storage tokens, and no token file or command is configured (--storage-token-file, --storage-token-command)",
			ErrStorageToken, a.siteOf(j, true), a.siteOf(j, false))
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
			tok, err := a.cfg.StorageTokens.Token(ctx, scope)
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrStorageToken, err)
			}
			pair[k] = tok
		}
		out[n.id] = pair
	}
	return out, nil
}

// siteOf names the source (or destination) site of j's first file.
func (a *Agent) siteOf(j *pendingJob, source bool) string {
	held := a.book.byID(j.ids)
	for _, f := range j.files {
		if t, ok := held[f.id]; ok {
			if source {
				return t.Source
			}
			return t.Destination
		}
	}
	return "?"
}

// markFile sets the scitag and storage tokens of one file of a submission.
func (a *Agent) markFile(sf *fts.SubmitFile, activity int, toks [2]string, has bool) {
	if activity == 0 {
		activity = a.cfg.ScitagActivity
	}
	if activity > 0 {
		sf.Scitag = Scitag(activity)
	}
	if has {
		sf.SourceTokens, sf.DestinationTokens = []string{toks[0]}, []string{toks[1]}
	}
}
