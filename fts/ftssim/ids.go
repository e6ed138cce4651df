package ftssim

import (
	"crypto/sha1" //nolint:gosec // FTS derives ids with SHA-1 (uuid5, delegation ids).
	"encoding/hex"
	"fmt"
	"time"
)

// baseID is FTS3's BASE_ID, the namespace of deterministic job ids.
const baseID = "01874efb-4735-4595-bc9c-591aef8240c9"

// uuidBytes parses a canonical UUID string.
func uuidBytes(s string) [16]byte {
	var u [16]byte
	h := make([]byte, 0, 32)
	for i := 0; i < len(s); i++ {
		if s[i] != '-' {
			h = append(h, s[i])
		}
	}
	if _, err := hex.Decode(u[:], h); err != nil {
		panic(fmt.Sprintf("ftstest: bad uuid %q", s))
	}
	return u
}

func formatUUID(u [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// uuid5 is the RFC 4122 name-based (SHA-1) UUID of name in namespace ns.
func uuid5(ns, name string) string {
	b := uuidBytes(ns)
	h := sha1.New() //nolint:gosec // required by RFC 4122 version 5.
	h.Write(b[:])
	h.Write([]byte(name))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	return formatUUID(u)
}

// DeterministicJobID returns the job id FTS gives a submission with
// id_generator "deterministic" and the given sid for a user of vo:
// uuid5(uuid5(BASE_ID, vo), sid).
func DeterministicJobID(vo, sid string) string {
	return uuid5(uuid5(baseID, vo), sid)
}

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

// gregorianOffset is the number of 100 ns intervals between 1582-10-15 and
// the Unix epoch.
const gregorianOffset = 0x01B21DD213814000

// uuid1Gen makes time-based (version 1) UUIDs from the simulated clock, with
// a node and clock sequence drawn from the seed, so ids are reproducible.
type uuid1Gen struct {
	last     uint64
	clockSeq uint16
	node     [6]byte
}

func newUUID1Gen(seed int64) *uuid1Gen {
	r := mix(uint64(seed), 0x5eed)
	g := &uuid1Gen{clockSeq: uint16(r>>48) & 0x3fff}
	for i := range g.node {
		g.node[i] = byte(r >> (8 * i))
	}
	g.node[0] |= 0x01 // multicast bit: not a real MAC address (RFC 4122 4.5)
	return g
}

func (g *uuid1Gen) next(now time.Time) string {
	ts := uint64(now.UnixNano()/100) + gregorianOffset
	if ts <= g.last {
		ts = g.last + 1
	}
	g.last = ts
	var u [16]byte
	tl, tm, th := uint32(ts), uint16(ts>>32), uint16(ts>>48)&0x0fff|0x1000
	u[0], u[1], u[2], u[3] = byte(tl>>24), byte(tl>>16), byte(tl>>8), byte(tl)
	u[4], u[5] = byte(tm>>8), byte(tm)
	u[6], u[7] = byte(th>>8), byte(th)
	u[8] = byte(g.clockSeq>>8)&0x3f | 0x80
	u[9] = byte(g.clockSeq)
	copy(u[10:], g.node[:])
	return formatUUID(u)
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
func DestinationUUID(url string) string { return uuid5(baseID, url) }
