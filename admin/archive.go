package admin

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/asyncstageout/aso/state"
)

// archive appends transfers to a JSON-lines file (state.Archiver).
type archive struct {
	f   *os.File
	enc *json.Encoder
}

func openArchive(path string) (*archive, error) {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	if os.IsNotExist(statErr) { // a new file: make its name durable too
		if d, err := os.Open(filepath.Dir(path)); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	return &archive{f: f, enc: json.NewEncoder(f)}, nil
}

func (a *archive) Write(ts []state.Transfer) error {
	for i := range ts {
		if err := a.enc.Encode(&ts[i]); err != nil {
			return fmt.Errorf("write %s: %w", a.f.Name(), err)
		}
	}
	return nil
}

func (a *archive) Sync() error {
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", a.f.Name(), err)
	}
	return nil
}
