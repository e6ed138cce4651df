package ftssim

import (
	"crypto/sha1" //nolint:gosec // FTS derives delegation ids with SHA-1.
	"encoding/hex"

	"github.com/google/uuid"
)

// baseID is FTS3's BASE_ID, the namespace of deterministic job ids.
var baseID = uuid.MustParse("01874efb-4735-4595-bc9c-591aef8240c9")

// uuid5 is the RFC 4122 name-based (SHA-1) UUID of name in namespace ns.
func uuid5(ns uuid.UUID, name string) uuid.UUID { return uuid.NewSHA1(ns, []byte(name)) }

// DeterministicJobID returns the job id FTS gives a submission with
// id_generator "deterministic" and the given sid for a user of vo:
// uuid5(uuid5(BASE_ID, vo), sid).
func DeterministicJobID(vo, sid string) string {
	return uuid5(uuid5(baseID, vo), sid).String()
}

// newJobID is the id of a job FTS's default generator gives: a time-based
// (version 1) UUID, as FTS's uuid1.
func newJobID() string { return uuid.Must(uuid.NewUUID()).String() }

// delegationID is FTS's delegation id: the first 16 hex digits of
// sha1(dn + every FQAN).
func delegationID(dn string, fqans []string) string {
	h := sha1.New() //nolint:gosec // FTS's definition.
	h.Write([]byte(dn))
	for _, f := range fqans {
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// mix is a SplitMix64-style hash of two words: the source of every
// simulated random choice, so that a choice depends only on the seed and on
// what it is about (a file id, an attempt), never on request order.
func mix(a, b uint64) uint64 {
	z := a ^ (b * 0x9e3779b97f4a7c15)
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// unit maps a hash to [0, 1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// DestinationUUID is FTS's dest_surl_uuid of a destination URL:
// uuid5(BASE_ID, url), the key CheckDuplicates makes unique among active
// files.
func DestinationUUID(url string) string { return uuid5(baseID, url).String() }
