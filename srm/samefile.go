package srm

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"strings"
	"syscall"
)

// SameFile reports whether the URLs a and b may name one file, so that
// writing or deleting one may change the other. It is the identity that
// every "is this the source?" question of aso asks, at enqueue, at
// submission and before a deletion:
//   - a local file:// URL is known by the device and inode it reaches once
//     symbolic links are resolved in every component (a hard link, a bind
//     mount and a symbolic link to a directory are all seen); a file that
//     does not exist yet by those of its nearest existing parent directory
//     plus the rest of its path, so that a destination under a link to the
//     source's directory is caught before the copy is made;
//   - the protocols by which one storage element serves its files (http,
//     https, dav, davs, root, xroot, gsiftp, srm) are one: the same host
//     (case-insensitive, with or without the trailing dot of a fully
//     qualified name) and path are the same file whatever the scheme and
//     the port, default or not; an SRM URL's ?SFN= path stands for its
//     path;
//   - paths are compared cleaned ("//", "/./" and ".." collapsed).
//
// Two names of one storage that differ in their hosts (DNS aliases) are
// not recognised. A file URL's identity is read from the local file
// system at the time of the call.
func SameFile(a, b string) bool {
	if a == b {
		return a != ""
	}
	ka, oka := identity(a)
	kb, okb := identity(b)
	return oka && okb && ka == kb
}

// storageScheme marks the schemes by which a storage element serves its
// files: a host and path name the same file through any of them.
var storageScheme = map[string]bool{
	"http": true, "https": true, "dav": true, "davs": true,
	"root": true, "xroot": true, "gsiftp": true, "srm": true,
}

// identity is what names u's file (see SameFile); ok is false when u does
// not parse.
func identity(u string) (key string, ok bool) {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" || p.Opaque != "" {
		return "", false
	}
	// a fully qualified name's trailing dot names the same host
	scheme, host, port := strings.ToLower(p.Scheme), strings.TrimSuffix(strings.ToLower(p.Hostname()), "."), p.Port()
	file := p.Path
	if sfn := p.Query().Get("SFN"); sfn != "" {
		file = sfn
	}
	switch {
	case scheme == "file" && (host == "" || host == "localhost") && strings.HasPrefix(file, "/"):
		return localIdentity(file), true
	case storageScheme[scheme]:
		scheme, port = "storage", ""
	}
	if file != "" {
		file = path.Clean("/" + file)
	}
	return scheme + "://" + host + ":" + port + file, true
}

// localIdentity is the identity of the local absolute path p: the device
// and inode of its file once its links are resolved, else those of the
// nearest existing directory above it and the rest of the path.
func localIdentity(p string) string {
	dir, rest := resolveLinks(p), ""
	for {
		if fi, err := os.Stat(dir); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				return fmt.Sprintf("inode://%d:%d%s", st.Dev, st.Ino, rest)
			}
		}
		if dir == "/" {
			return "file://" + p
		}
		rest = "/" + path.Base(dir) + rest
		dir = path.Dir(dir)
	}
}

// maxLinks bounds the symbolic links one resolution follows, as the
// kernel's ELOOP does.
const maxLinks = 40

// resolveLinks is the absolute path p with its symbolic links resolved in
// every component and "." and ".." applied, as the kernel resolves a path.
// From the first component that does not exist (or cannot be read) on,
// the rest is applied as written, as a copy that makes the missing
// directories would.
func resolveLinks(p string) string {
	todo, cur, missing, links := strings.Split(p, "/"), "/", false, 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		if !missing {
			fi, err := os.Lstat(next)
			missing = err != nil
			if err == nil && fi.Mode()&os.ModeSymlink != 0 && links < maxLinks {
				if target, err := os.Readlink(next); err == nil {
					links++
					if strings.HasPrefix(target, "/") {
						cur = "/"
					}
					todo = append(strings.Split(target, "/"), todo...)
					continue
				}
			}
		}
		cur = next
	}
	return cur
}
