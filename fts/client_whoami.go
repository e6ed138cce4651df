package fts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// WhoAmI is the server's view of the client's identity (GET /whoami).
type WhoAmI struct {
	UserDN       string   `json:"user_dn"`
	DN           []string `json:"dn"`
	VOs          []string `json:"vos"`
	DelegationID string   `json:"delegation_id"`
	Method       string   `json:"method"` // "certificate" or "oauth2"
	BaseID       string   `json:"base_id"`
}

// WhoAmI asks the server who the client is, and caches the answer for VO
// and EnsureDelegation.
func (c *Client) WhoAmI(ctx context.Context) (WhoAmI, error) {
	r, err := c.send(ctx, request{method: http.MethodGet, path: "/whoami", idempotent: true})
	if err != nil {
		return WhoAmI{}, fmt.Errorf("fts: whoami: %w", err)
	}
	if r.status != http.StatusOK {
		return WhoAmI{}, fmt.Errorf("fts: whoami: %w", r.httpError())
	}
	var w WhoAmI
	if err := json.Unmarshal(r.body, &w); err != nil {
		return WhoAmI{}, fmt.Errorf("fts: whoami: unreadable reply: %w", err)
	}
	if w.DelegationID == "" && w.UserDN == "" {
		return WhoAmI{}, errors.New("fts: whoami: reply names no user")
	}
	c.mu.Lock()
	c.who = &w
	c.mu.Unlock()
	return w, nil
}

// whoami returns the cached identity, asking the server the first time.
func (c *Client) whoami(ctx context.Context) (WhoAmI, error) {
	c.mu.Lock()
	w := c.who
	c.mu.Unlock()
	if w != nil {
		return *w, nil
	}
	return c.WhoAmI(ctx)
}

// VO returns the client's first VO according to the server (cached).
func (c *Client) VO(ctx context.Context) (string, error) {
	w, err := c.whoami(ctx)
	if err != nil {
		return "", err
	}
	if len(w.VOs) == 0 || w.VOs[0] == "" {
		return "", fmt.Errorf("fts: whoami: the server gives no VO for %s", w.UserDN)
	}
	return w.VOs[0], nil
}
