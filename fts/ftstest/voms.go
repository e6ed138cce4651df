package ftstest

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/asyncstageout/aso/internal/gridcert"
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
		Attributes: []vomsAttribute{{Type: gridcert.OIDVOMSFQANs, Values: []ietfAttrSyntax{{
			PolicyAuthority: asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: auth},
			Values:          vals,
		}}}},
	}
	info.Validity.NotBefore, info.Validity.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
	der, err := asn1.Marshal([][]attributeCertificate{{{Info: info, Algorithm: info.Signature}}})
	if err != nil {
		return pkix.Extension{}, fmt.Errorf("ftssim: encode VOMS attributes: %w", err)
	}
	return pkix.Extension{Id: gridcert.OIDVOMSACs, Value: der}, nil
}
