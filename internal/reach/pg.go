package reach

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// PgUnfixable reports a PostgreSQL connection failure no wait can fix, for
// Target.Fatal: the server refused the credentials (class 28), the database
// does not exist (3D000), an access rule refused (class 42: no privilege, a
// missing slot or publication), a certificate was refused, or the server
// refused TLS at every attempt (tls.mode require or verify-*, against a
// server with ssl off: PgExplain says so). A refused or
// timed-out connection, a server starting up (57P03) or out of connections
// (53300), and a slot another consumer holds (55006) may pass.
func PgUnfixable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "28") || pe.Code == "3D000" || strings.HasPrefix(pe.Code, "42")
	}
	return TLSRefused(err) || tlsRefused(err)
}

// refusedTLS is pgconn's error when the server answers a TLS request with
// no (its ssl is off).
const refusedTLS = "server refused TLS connection"

// tlsRefused reports whether every connection attempt in err was refused
// TLS. pgconn joins the errors of its attempts: with sslmode prefer (or
// allow) a refused TLS attempt is followed by one without, whose error is
// the cause, so that one alone does not count.
func tlsRefused(err error) bool {
	leaves := attempts(err, nil)
	if len(leaves) == 0 {
		return false
	}
	for _, e := range leaves {
		if !strings.Contains(e.Error(), refusedTLS) {
			return false
		}
	}
	return true
}

// attempts appends the errors below err's joins (err itself when it joins
// none).
func attempts(err error, out []error) []error {
	for err != nil {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				out = attempts(e, out)
			}
			return out
		}
		next := errors.Unwrap(err)
		if next == nil {
			return append(out, err)
		}
		err = next
	}
	return out
}

// PgExplain adds the fix to a connection failure that has a known one.
func PgExplain(err error) error {
	if tlsRefused(err) {
		return fmt.Errorf("%w: the server has TLS (ssl) off and tls.mode asks for it; turn ssl on in the server, or set tls.mode to prefer or disable where the network is trusted", err)
	}
	return err
}
