package cmd

import (
	"context"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
)

// completionLimit bounds what one completion reads from the store, and
// completionTimeout how long it may take: a shell waits for it.
const (
	completionLimit   = 200
	completionTimeout = 5 * time.Second
)

// setupCompletion makes the shell completion complete values: the words
// of word settings, states and error classes, and from the store (one
// bounded query each) users, links and transfer IDs.
func setupCompletion(root *cobra.Command, g *Globals) {
	_ = root.RegisterFlagCompletionFunc("user", fromStore(g, completeUsers))
	for name, words := range choices {
		_ = root.RegisterFlagCompletionFunc(name, fixed(nonEmpty(words)))
	}
	for _, c := range root.Commands() {
		if c.Flags().Lookup("in-state") != nil {
			_ = c.RegisterFlagCompletionFunc("in-state", listOf(names(state.States)))
			_ = c.RegisterFlagCompletionFunc("error-class", fixed(names(state.ErrorClasses)))
			_ = c.RegisterFlagCompletionFunc("link", fromStore(g, completeLinks))
		}
		switch c.Name() {
		case "status", "kill", "retry":
			c.ValidArgsFunction = fromStore(g, completeIDs)
		}
	}
}

// fixed completes one of words.
func fixed(words []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return withPrefix(words, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// listOf completes the last element of a comma-separated list of words.
func listOf(words []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		i := strings.LastIndex(toComplete, ",")
		head, last := toComplete[:i+1], toComplete[i+1:]
		given := strings.Split(head, ",")
		var out []string
		for _, w := range withPrefix(words, last) {
			if !slices.Contains(given, w) {
				out = append(out, head+w)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

func withPrefix(words []string, prefix string) []string {
	var out []string
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			out = append(out, w)
		}
	}
	return out
}

// names returns the words of xs.
func names[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// storeCompleter lists completions of toComplete from the store.
type storeCompleter func(ctx context.Context, g *Globals, st state.Store, toComplete string) ([]string, error)

// fromStore returns a completion function that loads the configuration
// (the completion runs without the command's setup), opens the store
// read-only and asks list. Nothing is logged (the shell would show it),
// and a failure completes nothing.
func fromStore(g *Globals, list storeCompleter) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		none := cobra.ShellCompDirectiveNoFileComp
		if err := g.Load(cmd); err != nil {
			return nil, none
		}
		g.Log.SetOutput(io.Discard)
		g.Log.SetLevel(logrus.PanicLevel)
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		ctx, cancel := context.WithTimeout(readOnly(ctx), completionTimeout)
		defer cancel()
		var out []string
		err := withStore(ctx, g, g.User, func(st state.Store) error {
			var err error
			out, err = list(ctx, g, st, toComplete)
			return err
		})
		if err != nil {
			return nil, none
		}
		return out, none
	}
}

// completeUsers completes the users with work due (one DueUsers query).
func completeUsers(ctx context.Context, _ *Globals, st state.Store, toComplete string) ([]string, error) {
	due, err := st.DueUsers(ctx, time.Now())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, u := range due {
		if strings.HasPrefix(u.User, toComplete) {
			out = append(out, u.User+"\t"+thousands(u.Queued)+" queued, "+thousands(u.Active)+" active")
		}
	}
	return out, nil
}

// completeLinks completes the links of --user's transfers (everyone's
// without --user), read from one page of at most completionLimit.
func completeLinks(ctx context.Context, g *Globals, st state.Store, toComplete string) ([]string, error) {
	ts, err := st.List(ctx, state.Filter{User: g.User, Limit: completionLimit})
	if err != nil {
		return nil, err
	}
	var out []string
	for i := range ts {
		if l := ts[i].Link(); strings.HasPrefix(l, toComplete) && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out, nil
}

// completeIDs completes transfer IDs that start with what was typed, of
// --user (everyone's without it): one query of at most completionLimit,
// each with its user, state and link.
func completeIDs(ctx context.Context, g *Globals, st state.Store, toComplete string) ([]string, error) {
	prefix := strings.ToLower(toComplete)
	if strings.Trim(prefix, "0123456789abcdef") != "" {
		return nil, nil
	}
	ts, err := st.List(ctx, state.Filter{User: g.User, IDPrefix: prefix, Limit: completionLimit})
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ts))
	for i := range ts {
		t := &ts[i]
		out[i] = t.ID + "\t" + t.User + " " + string(t.State) + " " + t.Link()
	}
	return out, nil
}
