package srm

import (
	"net/url"
	"path"
	"strings"
)

// SameFile reports whether the URLs a and b name one file: the same
// scheme (dav and http, davs and https, root and xroot count as one), host
// and port (a scheme's default port written or not), and path once cleaned
// ("//" and "/./" collapsed; an SRM URL's ?SFN= path stands for its path),
// case-insensitive in scheme and host. Two names of one storage that
// differ in their hosts are not recognised.
func SameFile(a, b string) bool {
	if a == b {
		return a != ""
	}
	ka, oka := fileKey(a)
	kb, okb := fileKey(b)
	return oka && okb && ka == kb
}

// schemeOf maps the schemes that reach one storage the same way to one.
var schemeOf = map[string]string{"http": "http", "dav": "http", "https": "https", "davs": "https", "root": "root", "xroot": "root"}

// defaultPort is the port a URL of the scheme uses when it names none.
var defaultPort = map[string]string{"http": "80", "https": "443", "root": "1094", "gsiftp": "2811", "srm": "8443"}

// fileKey is u reduced to what names its file; ok is false when u does
// not parse.
func fileKey(u string) (string, bool) {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" {
		return "", false
	}
	scheme := strings.ToLower(p.Scheme)
	if s, ok := schemeOf[scheme]; ok {
		scheme = s
	}
	host, port := strings.ToLower(p.Hostname()), p.Port()
	if port == "" {
		port = defaultPort[scheme]
	}
	file := p.Path
	if sfn := p.Query().Get("SFN"); sfn != "" {
		file = sfn
	}
	if file != "" {
		file = path.Clean("/" + file)
	}
	return scheme + "://" + host + ":" + port + file, true
}
