package serve

import (
	"encoding/json"
	"io"
)

// jsonLines returns an encoder of one JSON object a line, as `aso list
// --json` writes them.
func jsonLines(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}
