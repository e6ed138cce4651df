package couch

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/go-kivik/kivik/v4"
)

// The roles of aso's database. Init makes them its members (_security);
// validate_doc_update (validate.js) enforces what each may write from the
// writer's userCtx, and a refusal's reason names the rule and the role.
const (
	// RoleProducer creates transfers in state new for any user and
	// requests kills.
	RoleProducer = "aso-producer"
	// RoleUser is a physicist: the same as RoleProducer for the transfers
	// whose user is its CouchDB name only, and retries them.
	RoleUser = "aso-user"
	// RoleAgent is aso run: it moves transfers as the state rules allow
	// and holds run locks; it creates no transfer and deletes nothing.
	RoleAgent = "aso-agent"
	// RoleOperator kills, retries, purges, unlocks and resolves conflicts.
	RoleOperator = "aso-operator"
	// RoleReader reads (aso status, aso list, aso serve) and writes
	// nothing.
	RoleReader = "aso-reader"
	// RoleAdmin is CouchDB's server admin: everything, aso init included.
	RoleAdmin = "_admin"
)

// Roles are aso's roles, the members of its database.
var Roles = []string{RoleProducer, RoleUser, RoleAgent, RoleOperator, RoleReader}

// Identity is who a credential is, as the server knows it (GET /_session).
type Identity struct {
	// Name is the user's name, "" for an anonymous one.
	Name string
	// Roles are the user's roles.
	Roles []string
}

// Has reports whether the identity may act as role: it has it, or is a
// server admin.
func (id Identity) Has(role string) bool {
	return slices.Contains(id.Roles, role) || slices.Contains(id.Roles, RoleAdmin)
}

// AnyOf reports whether the identity has one of roles (see Has).
func (id Identity) AnyOf(roles ...string) bool {
	return slices.ContainsFunc(roles, id.Has)
}

// String names the user and its roles: `user "agent1" (roles aso-agent)`.
func (id Identity) String() string {
	who := "an anonymous user"
	if id.Name != "" {
		who = fmt.Sprintf("user %q", id.Name)
	}
	if len(id.Roles) == 0 {
		return who + " (no role)"
	}
	return who + " (roles " + strings.Join(id.Roles, ", ") + ")"
}

// WhoAmI asks the server who o's credentials are (GET /_session). Wrong
// credentials are an error with status 401.
func WhoAmI(ctx context.Context, o Options) (Identity, error) {
	c, t, _, err := connect(o)
	if err != nil {
		return Identity{}, err
	}
	defer c.Close()
	return whoAmI(ctx, c, t.server)
}

func whoAmI(ctx context.Context, c *kivik.Client, server string) (Identity, error) {
	var s *kivik.Session
	err := retryHTTP(ctx, func() error {
		var err error
		s, err = c.Session(ctx)
		return err
	})
	if err != nil {
		return Identity{}, fmt.Errorf("couch: who are the credentials for %s (GET /_session): %w", server, err)
	}
	return Identity{Name: s.Name, Roles: s.Roles}, nil
}

// ensureSecurity makes aso's roles members of db, keeping every other
// name and role of its _security object (kivik's reading of it), and
// writes it only when it changes. A database whose members were empty
// (open to every user of the server) becomes one of its members only.
func ensureSecurity(ctx context.Context, db *kivik.DB) error {
	var sec *kivik.Security
	err := retryHTTP(ctx, func() error {
		var err error
		sec, err = db.Security(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("read _security: %w", err)
	}
	want := slices.Clone(sec.Members.Roles)
	for _, r := range Roles {
		if !slices.Contains(want, r) {
			want = append(want, r)
		}
	}
	if len(want) == len(sec.Members.Roles) {
		return nil
	}
	sec.Members.Roles = want
	if err := retryHTTP(ctx, func() error { return db.SetSecurity(ctx, sec) }); err != nil {
		return fmt.Errorf("write _security: %w", err)
	}
	return nil
}

// Denied reports whether err is the server's refusal of the credentials:
// 401 (wrong or no credentials) or 403 (not allowed).
func Denied(err error) bool {
	st := kivik.HTTPStatus(err)
	return err != nil && (st == http.StatusUnauthorized || st == http.StatusForbidden)
}
