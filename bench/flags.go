package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/asyncstageout/aso/state"
)

// parseBackends parses a -backends flag: memfile and/or couch.
func parseBackends(list string) ([]string, error) {
	var out []string
	for _, b := range strings.Split(list, ",") {
		b = strings.TrimSpace(b)
		if b != "memfile" && b != "couch" {
			return nil, fmt.Errorf("-backends %q: want memfile and/or couch", list)
		}
		out = append(out, b)
	}
	return out, nil
}

// asoBinary returns the absolute path of the aso binary, which must exist.
func asoBinary(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("aso binary: %w (run make build, or give -aso)", err)
	}
	return abs, nil
}

// writeRequests writes requests 0..n-1, made by req, as JSON lines.
func writeRequests(path string, n int, req func(i int) state.Request) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i := range n {
		if err := enc.Encode(req(i)); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
