package ftssim

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// VOMS object identifiers: the proxy extension that carries attribute
// certificates, and the attribute that lists FQANs (IetfAttrSyntax).
var (
	oidVOMSACs   = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 8005, 100, 100, 5}
	oidVOMSFQANs = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 8005, 100, 100, 4}
)

// vomsAttribute is an AC attribute: its type and its values.
type vomsAttribute struct {
	Type   asn1.ObjectIdentifier
	Values []ietfAttrSyntax `asn1:"set"`
}

// ietfAttrSyntax is RFC 5755's IetfAttrSyntax with octet-string values.
type ietfAttrSyntax struct {
	PolicyAuthority asn1.RawValue `asn1:"optional,tag:0"`
	Values          [][]byte
}

// acInfo is the part of an attribute certificate the simulator writes: the
// fields a reader needs to find the attributes (holder and issuer are left
// as the proxy's issuer name).
type acInfo struct {
	Version   int
	Holder    asn1.RawValue
	Issuer    asn1.RawValue
	Signature pkix.AlgorithmIdentifier
	Serial    *big.Int
	Validity  struct {
		NotBefore, NotAfter time.Time `asn1:"generalized"`
	}
	Attributes []vomsAttribute
}

type attributeCertificate struct {
	Info      acInfo
	Algorithm pkix.AlgorithmIdentifier
	Signature asn1.BitString
}

// vomsExtension is a proxy extension holding one attribute certificate that
// lists fqans, as voms-proxy-init writes it. The AC is not signed by a VOMS
// server: the simulator does not verify AC signatures.
func vomsExtension(fqans []string) (pkix.Extension, error) {
	vo := strings.SplitN(strings.TrimPrefix(fqans[0], "/"), "/", 2)[0]
	auth, err := asn1.Marshal(asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 6, Bytes: []byte(vo + "://voms.example.org:15000")})
	if err != nil {
		return pkix.Extension{}, err
	}
	vals := make([][]byte, len(fqans))
	for i, f := range fqans {
		vals[i] = []byte(f)
	}
	now := time.Now().UTC().Truncate(time.Second)
	info := acInfo{
		Version:   1,
		Holder:    asn1.NullRawValue,
		Issuer:    asn1.NullRawValue,
		Signature: pkix.AlgorithmIdentifier{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 11}},
		Serial:    big.NewInt(now.Unix()),
		Attributes: []vomsAttribute{{Type: oidVOMSFQANs, Values: []ietfAttrSyntax{{
			PolicyAuthority: asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: auth},
			Values:          vals,
		}}}},
	}
	info.Validity.NotBefore, info.Validity.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
	der, err := asn1.Marshal([][]attributeCertificate{{{Info: info, Algorithm: info.Signature}}})
	if err != nil {
		return pkix.Extension{}, fmt.Errorf("ftssim: encode VOMS attributes: %w", err)
	}
	return pkix.Extension{Id: oidVOMSACs, Value: der}, nil
}

// vomsFQANs returns the FQANs of the first proxy in chain that carries a
// VOMS attribute-certificate extension, or nil for a plain proxy. It reads
// the attribute values wherever the AC holds them, without checking the
// AC's signature.
func vomsFQANs(chain []*x509.Certificate) []string {
	for _, c := range chain {
		for _, e := range c.Extensions {
			if e.Id.Equal(oidVOMSACs) {
				var out []string
				collectFQANs(e.Value, false, &out)
				return out
			}
		}
	}
	return nil
}

// collectFQANs walks DER: inside an attribute whose type is the VOMS FQAN
// attribute, every universal OCTET STRING is an FQAN.
func collectFQANs(der []byte, inside bool, out *[]string) {
	for len(der) > 0 {
		var v asn1.RawValue
		rest, err := asn1.Unmarshal(der, &v)
		if err != nil {
			return
		}
		der = rest
		switch {
		case v.Class == asn1.ClassUniversal && v.Tag == asn1.TagOctetString && inside:
			*out = append(*out, string(v.Bytes))
		case v.IsCompound:
			in := inside
			var oid asn1.ObjectIdentifier
			if _, err := asn1.Unmarshal(v.Bytes, &oid); err == nil && oid.Equal(oidVOMSFQANs) {
				in = true
			}
			collectFQANs(v.Bytes, in, out)
		}
	}
}
