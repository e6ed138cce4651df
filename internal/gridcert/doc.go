// Package gridcert verifies grid client certificates as a grid service
// (FTS3's mod_gridsite) does: an X.509 user certificate, or an RFC 3820
// proxy chain issued by one, which Go's crypto/x509 does not verify by
// itself (it refuses a certificate issued by an end-entity certificate).
// It also renders DNs in the OpenSSL one-line form grid services use and
// reads the VOMS FQANs of a proxy. The FTS3 simulator and aso serve both
// authenticate clients with it.
package gridcert
