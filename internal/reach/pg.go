package reach

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// PgUnfixable reports a PostgreSQL connection failure no wait can fix, for
// Target.Fatal: the server refused the credentials (class 28), the database
// does not exist (3D000), an access rule refused (class 42: no privilege, a
// missing slot or publication), or a certificate was refused. A refused or
// timed-out connection, a server starting up (57P03) or out of connections
// (53300), and a slot another consumer holds (55006) may pass.
func PgUnfixable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "28") || pe.Code == "3D000" || strings.HasPrefix(pe.Code, "42")
	}
	var cve *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	// (Not "server refused TLS connection": with sslmode prefer that is
	// the first of two attempts, and the second one's error is the cause.)
	return errors.As(err, &cve) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci)
}
