package verify

import (
	"encoding/binary"
	"hash/fnv"
	"math"
)

// Sample picks a random subset of transfers, each with probability
// Fraction, the same way for an ID every time it is asked within a run
// (it hashes the ID with Seed): a count of the selection and the
// verification that follows it pick the same transfers.
type Sample struct {
	Fraction float64 // 0 < Fraction <= 1; 1 picks every transfer
	Seed     uint64
}

// Picks reports whether the transfer id is in the sample.
func (s Sample) Picks(id string) bool {
	if s.Fraction >= 1 {
		return true
	}
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], s.Seed)
	h.Write(b[:])
	h.Write([]byte(id))
	return float64(h.Sum64()) < s.Fraction*math.MaxUint64
}
