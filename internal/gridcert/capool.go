package gridcert

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"regexp"
	"slices"
)

// caFileName matches the files of a grid CA directory that hold
// certificates: name.pem, name.crt, name.cer and the hash links hash.0,
// hash.1, ...
var caFileName = regexp.MustCompile(`(?i)\.(pem|crt|cer|[0-9]+)$`)

// CAPool reads the PEM certificates of path: a file, or every certificate
// file of a grid CA directory (as /etc/grid-security/certificates) but
// those named in skip. It returns how many files held a certificate; a
// file of the directory that cannot be read or holds none is passed over.
func CAPool(path string, skip ...string) (*x509.CertPool, int, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	files := []string{path}
	if fi.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, 0, err
		}
		files = nil
		for _, e := range entries {
			if !e.IsDir() && caFileName.MatchString(e.Name()) && !slices.Contains(skip, e.Name()) {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	} else if _, err := os.ReadFile(path); err != nil {
		return nil, 0, err
	}
	pool, n := x509.NewCertPool(), 0
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && pool.AppendCertsFromPEM(b) {
			n++
		}
	}
	return pool, n, nil
}
