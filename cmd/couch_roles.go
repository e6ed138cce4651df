package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/internal/statusview"
	"github.com/asyncstageout/aso/state/couch"
)

// Each command works on CouchDB with the least privilege it needs: the
// credentials of the first of its roles that the configuration gives a
// file for (couchdb-credentials-ROLE), else the general ones
// (couchdb-credentials, couchdb-user and couchdb-password, or the --state
// URL's). Before it works it asks the server who the credentials are
// (GET /_session) and stops (78) if they have none of the roles it needs.

// Credential roles: the suffixes of the couchdb-credentials-ROLE settings,
// and the CouchDB role each stands for.
var credentialRoles = []struct{ name, role string }{
	{"admin", couch.RoleAdmin},
	{"agent", couch.RoleAgent},
	{"producer", couch.RoleProducer},
	{"user", couch.RoleUser},
	{"operator", couch.RoleOperator},
	{"reader", couch.RoleReader},
}

// commandRole is what a command needs of CouchDB: the credential roles it
// uses, most fitting first, and the CouchDB roles one of which its
// credentials must have (a server admin has them all).
type commandRole struct {
	creds []string
	needs []string
}

// commandRoles are the roles of the commands that open a CouchDB store.
var commandRoles = map[string]commandRole{
	"init":              {[]string{"admin"}, []string{couch.RoleAdmin}},
	"run":               {[]string{"agent"}, []string{couch.RoleAgent}},
	"enqueue":           {[]string{"producer", "user"}, []string{couch.RoleProducer, couch.RoleUser}},
	"kill":              {[]string{"operator", "producer", "user"}, []string{couch.RoleOperator, couch.RoleProducer, couch.RoleUser}},
	"retry":             {[]string{"operator", "user"}, []string{couch.RoleOperator, couch.RoleUser}},
	"verify":            {[]string{"operator", "agent"}, []string{couch.RoleOperator, couch.RoleAgent}},
	"verify --dry-run":  {[]string{"reader"}, readers},
	"purge":             {[]string{"operator"}, []string{couch.RoleOperator}},
	"unlock":            {[]string{"operator"}, []string{couch.RoleOperator}},
	"resolve-conflicts": {[]string{"operator"}, []string{couch.RoleOperator}},
	"status":            {[]string{"reader"}, readers},
	"list":              {[]string{"reader"}, readers},
	"serve":             {[]string{"reader"}, readers},
}

// readers are the roles that may read the database: every member.
var readers = []string{couch.RoleReader, couch.RoleProducer, couch.RoleUser, couch.RoleAgent, couch.RoleOperator}

// credentialSetting is the setting of the credentials file of a
// credential role.
func credentialSetting(name string) string { return "couchdb-credentials-" + name }

// couchCredential says which credentials a command uses and who the server
// says they are.
type couchCredential struct {
	// Source says where they came from: a setting and its file, the
	// --state URL, the environment, or "none".
	Source string
	// Identity is who they are (filled by checkCouchRole).
	Identity couch.Identity
}

// roleCredentials fills o's credentials for the running command from the
// first of its credential roles that has a file configured; it returns
// where they came from, or "" when none is configured.
func roleCredentials(g *Globals, o *couch.Options) (string, error) {
	for _, name := range commandRoles[g.command].creds {
		setting := credentialSetting(name)
		file, err := couchSetting(g, setting)
		if err != nil || file == "" {
			if err != nil {
				return "", err
			}
			continue
		}
		if o.Username, o.Password, err = readCredentials(file); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s (%s)", setting, file), nil
	}
	return "", nil
}

// checkCouchRole asks the server who o's credentials are, records it, and
// returns a permanent error (exit 78) when the running command needs a
// role they do not have. Commands without a role need nothing.
func checkCouchRole(ctx context.Context, g *Globals, o couch.Options) error {
	need, ok := commandRoles[g.command]
	if !ok {
		return nil
	}
	id, err := couch.WhoAmI(ctx, o)
	if couch.Denied(err) {
		return permanent(fmt.Errorf("CouchDB refused the credentials from %s: %w", g.couchCred.Source, err))
	}
	if err != nil {
		return err
	}
	g.couchCred.Identity = id
	if id.AnyOf(need.needs...) {
		if g.Log != nil {
			e := g.Log.WithFields(logrus.Fields{"couchdb_user": id.Name, "roles": strings.Join(id.Roles, ","), "from": g.couchCred.Source})
			if g.command == "run" {
				e.Info("CouchDB credentials")
			} else {
				e.Debug("CouchDB credentials")
			}
		}
		return nil
	}
	settings := make([]string, len(need.creds))
	for i, name := range need.creds {
		settings[i] = credentialSetting(name)
	}
	return permanent(fmt.Errorf("the CouchDB credentials from %s are %s; aso %s needs the role %s: give the user the role "+
		"(aso init --users) or configure %s", g.couchCred.Source, id, g.command, strings.Join(need.needs, " or "), strings.Join(settings, " or ")))
}

// credentialJSON returns the checked CouchDB credentials of g's command,
// or nil when it opened no CouchDB store.
func credentialJSON(g *Globals) *statusview.Credential {
	if g.couchCred.Source == "" {
		return nil
	}
	return &statusview.Credential{Name: g.couchCred.Identity.Name, Roles: statusview.NonNil(g.couchCred.Identity.Roles), Source: g.couchCred.Source}
}
