package ftssim

import (
	"crypto/md5" //nolint:gosec // a checksum algorithm FTS supports, not security.
	"errors"
	"fmt"
	"hash"
	"hash/adler32"
	"hash/crc32"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// checkLocal is url-copy's check before a copy: the source must be a
// readable regular file, and the destination must not exist unless
// overwrite is set. It returns "" or the FTS reason.
func checkLocal(f *file) string {
	src, dst := localPath(f.sourceSURL), localPath(f.destSURL)
	in, err := os.Open(src)
	if err != nil {
		return ioReason("SOURCE", err)
	}
	defer in.Close()
	if st, err := in.Stat(); err != nil {
		return ioReason("SOURCE", err)
	} else if st.IsDir() {
		return fmt.Sprintf("SOURCE [%d] Source is a directory", errEISDIR)
	} else if !st.Mode().IsRegular() {
		return fmt.Sprintf("SOURCE [%d] Source is not a regular file", errEINVAL)
	}
	overwrite := f.job.overwrite == "Y" || (f.job.overwrite == "R" && f.retry > 0)
	if _, err := os.Lstat(dst); err == nil && !overwrite {
		return fmt.Sprintf("DESTINATION [%d] Destination file exists and overwrite is not enabled", errEEXIST)
	}
	return ""
}

// copyLocal really copies a file:// source to a file:// destination, as
// FTS's url-copy would: overwrite policy, parent directories, checksum
// verification. It writes to a temporary file renamed into place, so a
// failure leaves no partial destination. It returns the bytes copied and
// "" or the FTS reason.
func copyLocal(f *file) (int64, string) {
	if reason := checkLocal(f); reason != "" {
		return 0, reason
	}
	src, dst := localPath(f.sourceSURL), localPath(f.destSURL)
	in, err := os.Open(src)
	if err != nil {
		return 0, ioReason("SOURCE", err)
	}
	defer in.Close()
	alg, want := splitChecksum(f.checksum)
	mode := f.job.verifyChecksum
	if want == "" && mode != "b" {
		mode = "n" // nothing given to compare with
	}
	h := newChecksum(alg)
	if h == nil && mode != "n" {
		return 0, fmt.Sprintf("TRANSFER [%d] Checksum algorithm %s not supported", errEPROTONOSUPPORT, alg)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, ioReason("DESTINATION", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".fts-sim-*")
	if err != nil {
		return 0, ioReason("DESTINATION", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	var w io.Writer = tmp
	if h != nil {
		w = io.MultiWriter(tmp, h)
	}
	n, err := io.Copy(w, in)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, ioReason("TRANSFER", err)
	}
	if h != nil && mode != "n" {
		got := fmt.Sprintf("%0*x", h.Size()*2, h.Sum(nil))
		if want != "" && !strings.EqualFold(strings.TrimLeft(got, "0"), strings.TrimLeft(want, "0")) {
			scope, side := "SOURCE", "Source"
			if mode == "t" {
				scope, side = "DESTINATION", "Destination"
			}
			return 0, fmt.Sprintf("%s [%d] %s and user-defined %s checksum do not match (%s != %s)", scope, errEIO, side, alg, got, want)
		}
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return 0, ioReason("DESTINATION", err)
	}
	return n, ""
}

// localPath is the path of a file:// URL.
func localPath(surl string) string {
	u, err := url.Parse(surl)
	if err != nil {
		return strings.TrimPrefix(surl, "file://")
	}
	return u.Path
}

// splitChecksum splits "ALG:value"; a bare "ADLER32" has no value.
func splitChecksum(c string) (alg, value string) {
	alg, value, _ = strings.Cut(c, ":")
	return strings.ToUpper(alg), strings.ToLower(value)
}

func newChecksum(alg string) hash.Hash {
	switch alg {
	case "ADLER32", "AD":
		return adler32.New()
	case "MD5":
		return md5.New() //nolint:gosec // a checksum, not security.
	case "CRC32":
		return crc32.NewIEEE()
	}
	return nil
}

// ioReason turns an I/O error into an FTS reason "<SCOPE> [errno] message".
func ioReason(scope string, err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return fmt.Sprintf("%s [%d] %s", scope, int(errno), errnoText(errno))
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("%s [%d] No such file or directory", scope, errENOENT)
	}
	return fmt.Sprintf("%s [%d] %v", scope, errEIO, err)
}

// errnoText is strerror with a capital letter, as gfal2 reports it.
func errnoText(e syscall.Errno) string {
	t := e.Error()
	if t == "" {
		return t
	}
	return strings.ToUpper(t[:1]) + t[1:]
}
