package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
)

// couchSettingsHelp documents the CouchDB connection settings that are not
// part of --state. They are read from the environment or the configuration
// file by every command that opens a CouchDB store (root.go, shared by all
// commands, has no flags for them).
const couchSettingsHelp = `CouchDB settings (environment, or the config file key in parentheses):
  ASO_COUCHDB_CREDENTIALS_ROLE (couchdb-credentials-ROLE)  file holding the credentials of ROLE: admin (aso init),
                          agent (aso run), producer (enqueue, kill), user (enqueue, kill and retry of one's own),
                          operator (kill, retry, purge, unlock, resolve-conflicts), reader (status, list)
  ASO_COUCHDB_CREDENTIALS (couchdb-credentials)  file holding "user:password" or {"username":..,"password":..},
                          for every command whose roles have no file of their own
  ASO_COUCHDB_USER, ASO_COUCHDB_PASSWORD         credentials, when no file is given
  ASO_COUCHDB_CA_FILE     (couchdb-ca-file)      PEM CA bundle for https
  ASO_COUCHDB_TIMEOUT     (couchdb-timeout)      timeout of each HTTP request (default 30s)
Credentials files must be readable by their owner only (chmod 600). Credentials in the --state URL take
precedence over all of these. Each command checks that its credentials have the role it needs (exit 78 if not).`

// openCouch opens --state couchdb://HOST:PORT/DB (or http(s)://), once
// its credentials have the running command's role (checked by the fleet
// for its agents).
func openCouch(ctx context.Context, g *Globals, u string, cfg state.Config) (state.Store, error) {
	o, err := couchOptions(g, u)
	if err != nil {
		return nil, err
	}
	if g.couchChecked != nil {
		// an agent of a fleet, which checked the database and the role
		o.Checked = g.couchChecked
		g.couchCred.Identity = g.couchChecked.Identity
		return couch.Open(ctx, o, cfg)
	}
	if err := checkCouchRole(ctx, g, o); err != nil {
		return nil, err
	}
	return couch.Open(ctx, o, cfg)
}

// couchSetting reads a setting with no flag: ASO_<KEY> from the
// environment (even when empty), else key from the configuration file.
func couchSetting(g *Globals, key string) (string, error) {
	c, err := g.config()
	if err != nil {
		return "", err
	}
	return c.v.GetString(key), nil
}

// couchOptions builds the connection options of the store at u.
func couchOptions(g *Globals, u string) (couch.Options, error) {
	o := couch.Options{URL: u, WrapTransport: g.httpLog("couchdb", true)}
	pu, err := url.Parse(u)
	if err != nil {
		return o, usagef("--state %s: not a URL", couch.Redact(u))
	}
	g.couchCred = couchCredential{Source: "the --state URL"}
	if pu.User == nil {
		if g.couchCred.Source, err = couchCredentials(g, &o); err != nil {
			return o, err
		}
	}
	if o.CAFile, err = couchSetting(g, "couchdb-ca-file"); err != nil {
		return o, err
	}
	t, err := couchSetting(g, "couchdb-timeout")
	if err != nil {
		return o, err
	}
	if t != "" {
		if o.Timeout, err = durationSetting("couchdb-timeout", t); err != nil {
			return o, usagef("couchdb-timeout %q (ASO_COUCHDB_TIMEOUT or the configuration file): %v", t, err)
		}
	}
	return o, nil
}

// couchCredentials fills o's credentials when the --state URL has none:
// the running command's role file, else couchdb-credentials, else
// couchdb-user and couchdb-password. It returns where they came from.
func couchCredentials(g *Globals, o *couch.Options) (string, error) {
	src, err := roleCredentials(g, o)
	if err != nil || src != "" {
		return src, err
	}
	file, err := couchSetting(g, "couchdb-credentials")
	if err != nil {
		return "", err
	}
	if file != "" {
		o.Username, o.Password, err = readCredentials(file)
		return fmt.Sprintf("couchdb-credentials (%s)", file), err
	}
	o.Username, _ = couchSetting(g, "couchdb-user")
	o.Password, _ = couchSetting(g, "couchdb-password")
	if o.Username == "" {
		return "none (no credentials configured)", nil
	}
	return "couchdb-user and couchdb-password", nil
}

// readCredentials reads "user:password" or a JSON object with username (or
// user) and password from file, which only its owner may read. Errors never
// quote the file's content.
func readCredentials(file string) (user, pass string, err error) {
	st, err := os.Stat(file)
	if err != nil {
		return "", "", permanent(fmt.Errorf("CouchDB credentials file: %w", err))
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return "", "", permanent(fmt.Errorf("CouchDB credentials file %s is accessible by group or others (mode %04o); run: chmod 600 %s", file, perm, file))
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", "", permanent(fmt.Errorf("CouchDB credentials file: %w", err))
	}
	text := strings.TrimSpace(string(b))
	if strings.HasPrefix(text, "{") {
		var c struct {
			Username string `json:"username"`
			User     string `json:"user"`
			Password string `json:"password"`
		}
		if json.Unmarshal([]byte(text), &c) != nil {
			return "", "", usagef("CouchDB credentials file %s: not valid JSON (want {\"username\": ..., \"password\": ...})", file)
		}
		if c.Username == "" {
			c.Username = c.User
		}
		user, pass = c.Username, c.Password
	} else {
		user, pass, _ = strings.Cut(text, ":")
	}
	if user == "" || pass == "" {
		return "", "", usagef("CouchDB credentials file %s: want \"user:password\" or {\"username\": ..., \"password\": ...}", file)
	}
	return user, pass, nil
}
