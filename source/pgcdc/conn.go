package pgcdc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"

	"github.com/weir-etl/weir/internal/reach"
)

// sessionParams are set on every connection, the replication one included
// (its walsender formats pgoutput's values with them): the text forms the
// value conversion expects.
var sessionParams = map[string]string{
	"DateStyle":          "ISO, YMD",
	"TimeZone":           "UTC",
	"IntervalStyle":      "postgres",
	"extra_float_digits": "3", // shortest exact float output
	"bytea_output":       "hex",
	"application_name":   "weir",
}

// prepare sets the password from the environment and the session
// parameters on a parsed configuration. Errors never hold the password:
// pgconn redacts the URL's, and the password is set after parsing.
func (c *Config) prepare(cc *pgconn.Config, replication bool) error {
	if c.PasswordEnv != "" {
		pw, ok := os.LookupEnv(c.PasswordEnv)
		if !ok || pw == "" {
			return &setupError{fmt.Errorf("pgcdc: password_env names %s, which is not set: export the password in it", c.PasswordEnv)}
		}
		cc.Password = pw
	}
	for k, v := range sessionParams {
		cc.RuntimeParams[k] = v
	}
	if replication {
		cc.RuntimeParams["replication"] = "database"
	}
	// A cancelled context interrupts a read by a deadline on the socket,
	// never by a cancel request: on a replication connection a cancel
	// request would end the stream.
	cc.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: pc.Conn()}
	}
	return nil
}

// setupError is a connection's failure before it reaches the network (a
// bad URL, a password variable not set): waiting does not fix it.
type setupError struct{ err error }

func (e *setupError) Error() string { return e.err.Error() }
func (e *setupError) Unwrap() error { return e.err }

// unfixable reports a connection failure no wait can fix (reach.Target.Fatal).
func unfixable(err error) bool {
	var se *setupError
	return errors.As(err, &se) || reach.PgUnfixable(err)
}

// peer names the server for messages: host:port and database.
func (c *Config) peer() string {
	pc, err := pgconn.ParseConfig(c.URL)
	if err != nil {
		return "PostgreSQL (url does not parse)"
	}
	return fmt.Sprintf("PostgreSQL at %s (database %s)", net.JoinHostPort(pc.Host, strconv.Itoa(int(pc.Port))), pc.Database)
}

// connectSQL opens an ordinary connection.
func (c *Config) connectSQL(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(c.URL)
	if err != nil {
		return nil, &setupError{fmt.Errorf("pgcdc: url: %w", err)}
	}
	if err := c.prepare(&cfg.Config, false); err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgcdc: connecting: %w", err)
	}
	return conn, nil
}

// connectReplication opens a logical replication connection.
func (c *Config) connectReplication(ctx context.Context) (*pgconn.PgConn, error) {
	pc, err := pgconn.ParseConfig(c.URL)
	if err != nil {
		return nil, &setupError{fmt.Errorf("pgcdc: url: %w", err)}
	}
	if err := c.prepare(pc, true); err != nil {
		return nil, err
	}
	conn, err := pgconn.ConnectConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("pgcdc: opening the replication connection: %w", err)
	}
	return conn, nil
}

// fatal reports errors that no reconnection can fix: the pipeline stops with
// them instead of retrying the same refusal for ever.
func fatal(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code[:2] {
	case "28": // invalid authorization: wrong password, no pg_hba entry
		return true
	case "3D": // the database does not exist
		return true
	case "42": // syntax or access rule: a missing slot or publication, no privilege
		return true
	}
	return false
}
