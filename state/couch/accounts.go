package couch

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/go-kivik/kivik/v4"
)

// usersDB is the server's database of users; userPrefix starts the ID of
// each user's document.
const (
	usersDB    = "_users"
	userPrefix = "org.couchdb.user:"
)

// Account is a CouchDB user of one of aso's roles.
type Account struct {
	Name, Password string
	// Role is one of Roles.
	Role string
}

// What EnsureAccounts did with an account.
const (
	AccountCreated   = "created"
	AccountUpdated   = "updated"
	AccountUnchanged = "unchanged"
)

// EnsureAccounts makes each account a user of the server, with its role
// (added to any it has) and its password, in the _users database (created
// if missing, as CouchDB 3 does not create it by itself). o needs a server
// admin's credentials. An account that already logs in with its password
// and has its role is left unchanged. It returns what it did with each
// account, in order; errors never quote a password.
func EnsureAccounts(ctx context.Context, o Options, accounts []Account) ([]string, error) {
	for _, a := range accounts {
		if a.Name == "" || strings.Contains(a.Name, ":") || a.Password == "" {
			return nil, fmt.Errorf("couch: account %q: a name without ':' and a password are needed", a.Name)
		}
		if !slices.Contains(Roles, a.Role) {
			return nil, fmt.Errorf("couch: account %q: role %q is not one of aso's (%s)", a.Name, a.Role, strings.Join(Roles, ", "))
		}
	}
	c, t, _, err := connect(o)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	err = retryHTTP(ctx, func() error {
		err := c.CreateDB(ctx, usersDB)
		if kivik.HTTPStatus(err) == http.StatusPreconditionFailed {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("couch: create %s on %s: %w", usersDB, t.server, err)
	}
	db := c.DB(usersDB)
	defer db.Close()
	out := make([]string, len(accounts))
	for i, a := range accounts {
		if out[i], err = ensureAccount(ctx, db, o, a); err != nil {
			return out[:i], fmt.Errorf("couch: user %s on %s: %w", a.Name, t.server, err)
		}
	}
	return out, nil
}

// ensureAccount creates or updates one account.
func ensureAccount(ctx context.Context, db *kivik.DB, o Options, a Account) (string, error) {
	id := userPrefix + a.Name
	var doc map[string]any
	err := retryHTTP(ctx, func() error { return db.Get(ctx, id).ScanDoc(&doc) })
	switch {
	case kivik.HTTPStatus(err) == http.StatusNotFound:
		doc = map[string]any{"_id": id, "name": a.Name, "type": "user", "roles": []string{a.Role}, "password": a.Password}
		if err := retryHTTP(ctx, func() error { _, err := db.Put(ctx, id, doc); return err }); err != nil {
			return "", fmt.Errorf("create: %w", err)
		}
		return AccountCreated, nil
	case err != nil:
		return "", fmt.Errorf("read: %w", err)
	}
	var roles []string
	if rs, ok := doc["roles"].([]any); ok {
		for _, r := range rs {
			if s, ok := r.(string); ok {
				roles = append(roles, s)
			}
		}
	}
	passOK := logsIn(ctx, o, a)
	if passOK && slices.Contains(roles, a.Role) {
		return AccountUnchanged, nil
	}
	if !slices.Contains(roles, a.Role) {
		roles = append(roles, a.Role)
	}
	doc["roles"] = roles
	if !passOK {
		doc["password"] = a.Password
	}
	if err := retryHTTP(ctx, func() error { _, err := db.Put(ctx, id, doc); return err }); err != nil {
		return "", fmt.Errorf("update: %w", err)
	}
	return AccountUpdated, nil
}

// logsIn reports whether a's name and password authenticate on o's server.
func logsIn(ctx context.Context, o Options, a Account) bool {
	id, err := WhoAmI(ctx, WithCredentials(o, a.Name, a.Password))
	return err == nil && id.Name == a.Name
}

// WithCredentials returns o with user and pass as its credentials, and
// none in its URL (those would take precedence).
func WithCredentials(o Options, user, pass string) Options {
	parts := splitNodes(o.URL)
	for i, p := range parts {
		if u, err := url.Parse(p); err == nil && u.User != nil {
			u.User = nil
			parts[i] = u.String()
		}
	}
	o.URL = strings.Join(parts, ",")
	o.Username, o.Password = user, pass
	return o
}
