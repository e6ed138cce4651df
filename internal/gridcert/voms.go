package gridcert

import (
	"crypto/x509"
	"encoding/asn1"
)

// VOMS object identifiers: the proxy extension that carries attribute
// certificates, and the attribute that lists FQANs (IetfAttrSyntax).
var (
	OIDVOMSACs   = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 8005, 100, 100, 5}
	OIDVOMSFQANs = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 8005, 100, 100, 4}
)

// VOMSFQANs returns the FQANs of the first proxy in chain that carries a
// VOMS attribute-certificate extension, or nil for a plain proxy. It reads
// the attribute values wherever the AC holds them, without checking the
// AC's signature.
func VOMSFQANs(chain []*x509.Certificate) []string {
	for _, c := range chain {
		for _, e := range c.Extensions {
			if e.Id.Equal(OIDVOMSACs) {
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
			if _, err := asn1.Unmarshal(v.Bytes, &oid); err == nil && oid.Equal(OIDVOMSFQANs) {
				in = true
			}
			collectFQANs(v.Bytes, in, out)
		}
	}
}
