package fts

import "errors"

// IsCredential reports whether err is a problem with the client's own
// credentials that retrying will not cure: an unreadable or expired proxy or
// token, a certificate the server or the client refused, or a 401 or 403
// reply.
func IsCredential(err error) bool {
	var ce *credentialError
	return errors.As(err, &ce) || isCertificateError(err) ||
		errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrForbidden)
}
