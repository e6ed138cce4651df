package ftssim

import (
	"bufio"
	_ "embed" // the default failure reasons
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

//go:embed failures.txt
var defaultReasons string

// maxReasonLen bounds one reason; FTS stores reasons in a 2048-byte column.
const maxReasonLen = 2048

// ReadFailureReasons reads failure reasons, one a line, as FTS stores them
// ("SCOPE [errno] message" or a bare message). Blank lines and lines that
// start with # are skipped. A line that is not valid UTF-8 or is longer than
// 2048 bytes is an error naming it; so is a file without any reason.
func ReadFailureReasons(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case !utf8.ValidString(line):
			return nil, fmt.Errorf("line %d: not valid UTF-8", n)
		case len(line) > maxReasonLen:
			return nil, fmt.Errorf("line %d: reason of %d bytes, longer than FTS's %d", n, len(line), maxReasonLen)
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read failure reasons: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("no failure reason (one a line; # starts a comment)")
	}
	return out, nil
}

func mustReadReasons(s string) []string {
	r, err := ReadFailureReasons(strings.NewReader(s))
	if err != nil {
		panic("ftssim: failures.txt: " + err.Error())
	}
	return r
}
