package gridcert_test

import (
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/internal/gridcert"
)

// chainOf parses the certificates of a PEM bundle, in order.
func chainOf(t *testing.T, b []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return out
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
}

// TestVerifyChain: a user certificate and its RFC 3820 proxies verify
// against their CA and give the user's DN; an expired proxy, another CA
// and no CA at all are refused.
func TestVerifyChain(t *testing.T) {
	p, err := ftstest.MakePKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := ftstest.MakePKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	voms, err := ftstest.MakeProxy(p, time.Hour, "/cms/Role=NULL/Capability=NULL")
	if err != nil {
		t.Fatal(err)
	}
	expired, err := ftstest.MakeProxy(p, -time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for name, chain := range map[string][]*x509.Certificate{
		"user certificate": chainOf(t, p.UserCertPEM),
		"proxy":            chainOf(t, p.ProxyPEM),
		"VOMS proxy":       chainOf(t, voms),
	} {
		eec, err := gridcert.VerifyChain(chain, p.CAPool, now)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := gridcert.FormatDN(eec.RawSubject); got != p.UserDN {
			t.Fatalf("%s: DN %q, want %q", name, got, p.UserDN)
		}
	}
	if got := gridcert.VOMSFQANs(chainOf(t, voms)); len(got) != 1 || got[0] != "/cms/Role=NULL/Capability=NULL" {
		t.Fatalf("FQANs of the VOMS proxy: %q", got)
	}
	if _, err := gridcert.VerifyChain(chainOf(t, expired), p.CAPool, now); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired proxy: %v", err)
	}
	if _, err := gridcert.VerifyChain(chainOf(t, p.ProxyPEM), other.CAPool, now); err == nil {
		t.Fatal("a proxy of another CA's user verified")
	}
	if _, err := gridcert.VerifyChain(chainOf(t, p.ProxyPEM), nil, now); err == nil {
		t.Fatal("a chain verified without any CA")
	}
}
