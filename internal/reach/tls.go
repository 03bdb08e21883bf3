package reach

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
)

// TLSRefused reports a TLS failure no wait can fix, for every connector's
// Target.Fatal (or its own wait): a certificate refused, ours or the
// peer's; TLS spoken to a port that does not speak it; a TLS alert from the
// peer (it refused our certificate, or the lack of one). Waiting for the
// peer does not change a certificate or a port's protocol.
func TLSRefused(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		header   tls.RecordHeaderError
		op       *net.OpError
	)
	switch {
	case err == nil:
		return false
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid):
		return true
	case errors.As(err, &header):
		return true
	case errors.As(err, &op) && op.Op == "remote error":
		return true
	}
	// net/http replaces the record header error of an https:// request
	// answered in plain HTTP by an error of its own.
	return strings.Contains(err.Error(), plainAnswer)
}

// plainAnswer is net/http's error for an https:// request answered in
// plain HTTP.
const plainAnswer = "server gave HTTP response to HTTPS client"

// PlainHTTP reports an https:// request answered in plain HTTP, whose fix is
// an http:// address.
func PlainHTTP(err error) bool {
	return err != nil && strings.Contains(err.Error(), plainAnswer)
}
