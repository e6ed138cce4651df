package cmd

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/asyncstageout/aso/srm"
)

// gfalPlugins maps a URL scheme to the gfal2 plugin that handles it; the
// plugin "NAME" is the library libgfal_plugin_NAME.so and, on Debian and on
// RHEL (EPEL) alike, the package gfal2-plugin-NAME.
var gfalPlugins = map[string]string{
	"file": "file", "mock": "mock",
	"http": "http", "https": "http", "dav": "http", "davs": "http", "s3": "http", "s3s": "http",
	"root": "xrootd", "roots": "xrootd", "xroot": "xrootd", "xroots": "xrootd",
	"gsiftp": "gridftp", "ftp": "gridftp", "srm": "srm", "sftp": "sftp",
}

// gfalPluginDirs are the directories gfal2 loads its plugins from: Debian
// and Ubuntu (by architecture), then RHEL and its rebuilds.
var gfalPluginDirs = []string{
	"/usr/lib/x86_64-linux-gnu/gfal2-plugins",
	"/usr/lib/aarch64-linux-gnu/gfal2-plugins",
	"/usr/lib64/gfal2-plugins",
	"/usr/lib/gfal2-plugins",
}

// plainSchemes need no CA directory.
var plainSchemes = map[string]bool{"file": true, "mock": true, "http": true, "ftp": true}

// installHint says how to install packages on Debian and on RHEL.
func installHint(pkgs ...string) string {
	p := strings.Join(pkgs, " ")
	return "install it: Debian/Ubuntu: apt-get install " + p + "; RHEL/AlmaLinux (EPEL): dnf install " + p
}

// checkRunEnvironment checks, before any transfer is claimed, what `aso
// run` needs from the machine: gfal-rm, the gfal2 plugin of every URL
// scheme the sites file produces, a CA directory with certificates when a
// server is reached over TLS, and readable credentials. The error lists
// every problem with what to do. A dry run is not checked. With the local
// simulator (which copies file:// URLs only) a missing plugin of another
// scheme is a warning. A missing default CA directory is a warning too (the
// FTS client refuses to start if it needs one); one given by --cert-dir or
// X509_CERT_DIR must be usable.
func checkRunEnvironment(o *RunOptions, g *Globals, sites *srm.Sites) error {
	if o.Agent.DryRun {
		return nil
	}
	local := o.FTS.Endpoint == "local"
	var errs []error
	warn := func(err error) {
		if g.Log != nil {
			g.Log.Warn(err.Error())
		}
	}
	if _, err := exec.LookPath(o.GfalRm); err != nil {
		errs = append(errs, fmt.Errorf("gfal-rm %q: %v; it deletes the destination copy of failed transfers: %s", o.GfalRm, errors.Unwrap(err), installHint("gfal2-util-scripts")))
	} else {
		// the same package's gfal-stat and gfal-sum read a file FTS found
		// at a destination (see agent.DestinationChecker)
		d := srm.Deleter{Command: o.GfalRm}
		for _, name := range []string{"gfal-stat", "gfal-sum"} {
			if _, err := exec.LookPath(d.Sibling(name)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v; it reads the file FTS finds at a destination (taken from the directory of --gfal-rm, else from PATH): %s",
					name, errors.Unwrap(err), installHint("gfal2-util-scripts")))
			}
		}
	}
	for _, s := range sites.Schemes() {
		var err error
		name, ok := gfalPlugins[s]
		switch {
		case !ok:
			err = fmt.Errorf("sites file %s: no gfal2 plugin is known for %s:// URLs", o.Sites, s)
		case !pluginInstalled(name):
			err = fmt.Errorf("gfal2 cannot delete %s:// URLs (the sites file %s produces them): libgfal_plugin_%s.so is in none of %s: %s",
				s, o.Sites, name, strings.Join(gfalPluginDirs, ", "), installHint("gfal2-plugin-"+name))
		}
		switch {
		case err == nil:
		case local && s != "file":
			warn(err)
		default:
			errs = append(errs, err)
		}
	}
	needCA := !local && !o.FTS.Insecure && !strings.HasPrefix(strings.ToLower(o.FTS.Endpoint), "http://")
	if dir := o.FTS.certDir(g); needCA || sitesNeedCA(sites) {
		if err := checkCertDir(dir); err != nil && cmp.Or(o.FTS.CertDir, g.getenv("X509_CERT_DIR")) == "" {
			warn(err)
		} else if err != nil {
			errs = append(errs, err)
		}
	}
	proxy := o.FTS.proxyPath(g)
	if o.FTS.tokenFile(g) != "" {
		proxy = o.FTS.Proxy // a token is used; a proxy only if given
	}
	for _, c := range []struct{ what, path string }{{"proxy", proxy}, {"token file", o.FTS.tokenFile(g)}} {
		if c.path == "" || local {
			continue
		}
		if err := checkReadable(c.path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.what, err))
		}
	}
	return errors.Join(errs...)
}

func pluginInstalled(name string) bool {
	for _, dir := range gfalPluginDirs {
		if _, err := os.Stat(filepath.Join(dir, "libgfal_plugin_"+name+".so")); err == nil {
			return true
		}
	}
	return false
}

// caFile matches the certificate files of a grid CA directory.
var caFile = regexp.MustCompile(`(?i)\.(pem|crt|[0-9]+)$`)

// checkCertDir checks that dir is a readable directory holding at least
// one certificate file.
func checkCertDir(dir string) error {
	const hint = "give the directory of trusted CA certificates with --cert-dir or X509_CERT_DIR (the grid CAs: the EGI trust anchors, package ca-policy-egi-core)"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("CA directory: %v; %s", err, hint)
	}
	for _, e := range entries {
		if !e.IsDir() && caFile.MatchString(e.Name()) {
			return nil
		}
	}
	return fmt.Errorf("CA directory %s holds no certificate (*.pem, *.crt, <hash>.0); %s", dir, hint)
}

// checkReadable checks that a credential file can be read and is not empty;
// errors never quote its content.
func checkReadable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var b [1]byte
	if n, _ := f.Read(b[:]); n == 0 {
		return fmt.Errorf("%s is empty", path)
	}
	return nil
}

// sitesNeedCA reports whether a URL scheme of the sites file is reached
// over TLS (or GSI), so that gfal-rm needs the CA directory.
func sitesNeedCA(sites *srm.Sites) bool {
	for _, s := range sites.Schemes() {
		if !plainSchemes[s] {
			return true
		}
	}
	return false
}
