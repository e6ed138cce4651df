package verify

import (
	"fmt"

	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
)

// Outcome is what a verification found for one transfer: one line of aso
// verify, and the entry written into the transfer's history.
type Outcome struct {
	ID     string             `json:"id"`
	User   string             `json:"user"`
	URL    string             `json:"url,omitempty"`
	Result state.VerifyResult `json:"result"`
	Detail string             `json:"detail,omitempty"`
	// Size and Adler32 are what the storage gave (when it did).
	Size    int64  `json:"size,omitempty"`
	Adler32 string `json:"adler32,omitempty"`
	// Errno is gfal's error code, when the storage could not be read.
	Errno int `json:"errno,omitempty"`
	// NotRecorded says why the result could not be written into the
	// transfer's history ("" when it was, or in a dry run).
	NotRecorded string `json:"not_recorded,omitempty"`

	stopped bool // the check was cut short by a stop: not a result
}

// Classify compares what was found at a transfer's destination with the
// size and adler32 of its request. A file the storage says is not there
// (errno ENOENT) is missing; any other error is unreadable, however its
// message reads; another size, another checksum or something that is not
// a file differs. A request without an adler32 is checked by its size,
// and the detail says so.
func Classify(t *state.Transfer, e srm.Existing) Outcome {
	o := Outcome{ID: t.ID, User: t.User, URL: e.URL, Size: e.Size, Adler32: e.Adler32, Errno: e.Errno}
	sum := t.Checksum()
	switch {
	case e.Missing:
		o.Result, o.Detail = state.VerifyMissing, "no such file (ENOENT)"
		o.Size = 0
	case e.Err != nil:
		o.Result, o.Detail = state.VerifyUnreadable, e.Err.Error()
	case e.NotFile != "":
		o.Result, o.Detail = state.VerifyDiffers, fmt.Sprintf("a %s, not a file", e.NotFile)
		o.Size = 0
	case t.Size > 0 && e.Size != t.Size:
		o.Result, o.Detail = state.VerifyDiffers, fmt.Sprintf("size %d, want %d", e.Size, t.Size)
	case sum != "" && e.Adler32 != sum:
		o.Result, o.Detail = state.VerifyDiffers, fmt.Sprintf("adler32 %s, want %s", e.Adler32, sum)
	case sum == "":
		o.Result, o.Detail = state.VerifyPresent, fmt.Sprintf("size %d matches; the request gives no adler32", e.Size)
	case t.Size == 0:
		o.Result, o.Detail = state.VerifyPresent, fmt.Sprintf("adler32 %s matches (the request gives no size; the file has %d bytes)", sum, e.Size)
	default:
		o.Result, o.Detail = state.VerifyPresent, fmt.Sprintf("size %d and adler32 %s match", e.Size, sum)
	}
	return o
}
