package iceberg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	// The s3:// scheme for warehouses on S3.
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
	// A pure-Go SQLite driver (registered as "sqlite"): release builds keep
	// CGO off.
	_ "modernc.org/sqlite"
)

// catalogProps are the properties every catalog and table file system is
// given: the warehouse and the S3 settings.
func (c *Config) catalogProps() iceberg.Properties {
	props := iceberg.Properties{}
	for k, v := range c.Catalog.Properties {
		props[k] = v
	}
	if w := c.Catalog.Warehouse; w != "" {
		props["warehouse"] = warehouseURI(w)
	}
	if c.S3.Endpoint != "" {
		props[iceio.S3EndpointURL] = c.S3.Endpoint
	}
	if c.S3.Region != "" {
		props[iceio.S3Region] = c.S3.Region
	}
	if c.S3.PathStyle {
		props[iceio.S3ForceVirtualAddressing] = "false"
	}
	return props
}

// warehouseURI makes a local directory absolute: the table's location is
// stored in its metadata, and readers elsewhere resolve it as written.
func warehouseURI(w string) string {
	if u, err := url.Parse(w); err == nil && u.Scheme != "" {
		return w
	}
	if abs, err := filepath.Abs(w); err == nil {
		return "file://" + abs
	}
	return w
}

// openCatalog connects to the catalog once: the caller retries (see wait).
// It returns the catalog and a function that releases it.
func (s *Sink) openCatalog(ctx context.Context) (catalog.Catalog, func(), error) {
	c := &s.cfg.Catalog
	props := s.cfg.catalogProps()
	switch c.Type {
	case CatalogREST:
		opts := []rest.Option{rest.WithAdditionalProps(props)}
		if c.Warehouse != "" {
			opts = append(opts, rest.WithWarehouseLocation(warehouseURI(c.Warehouse)))
		}
		if c.TokenEnv != "" {
			tok, ok := os.LookupEnv(c.TokenEnv)
			if !ok {
				return nil, nil, permanent(fmt.Errorf("catalog.token_env: the environment variable %s is not set: set it to the token", c.TokenEnv))
			}
			opts = append(opts, rest.WithOAuthToken(tok))
		}
		if c.CredentialEnv != "" {
			cred, ok := os.LookupEnv(c.CredentialEnv)
			if !ok {
				return nil, nil, permanent(fmt.Errorf("catalog.credential_env: the environment variable %s is not set: set it to client_id:client_secret", c.CredentialEnv))
			}
			opts = append(opts, rest.WithCredential(cred))
		}
		cctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		defer cancel()
		cat, err := rest.NewCatalog(cctx, c.Name, c.URI, opts...)
		if err != nil {
			return nil, nil, err
		}
		return cat, func() {}, nil
	case CatalogSQL:
		var db *sql.DB
		dialect := sqlcat.Postgres
		if strings.HasPrefix(c.URI, "sqlite:") {
			dialect = sqlcat.SQLite
			path := sqlitePath(c.URI)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return nil, nil, permanent(err)
			}
			// WAL and a busy timeout let several writers share the file;
			// synchronous=FULL makes each commit durable.
			dsn := "file:" + path + "?_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
			var err error
			if db, err = sql.Open("sqlite", dsn); err != nil {
				return nil, nil, permanent(err)
			}
		} else {
			pc, err := pgx.ParseConfig(c.URI)
			if err != nil {
				return nil, nil, permanent(errors.New("catalog.uri: not a valid postgres URL"))
			}
			// The password comes from password_env alone, never from the
			// URL or PGPASSWORD.
			pc.Password = ""
			if c.PasswordEnv != "" {
				pw, ok := os.LookupEnv(c.PasswordEnv)
				if !ok {
					return nil, nil, permanent(fmt.Errorf("catalog.password_env: the environment variable %s is not set: set it to the password, or set password_env to \"\" for none", c.PasswordEnv))
				}
				pc.Password = pw
			}
			pc.ConnectTimeout = s.cfg.CallTimeout
			if pc.RuntimeParams == nil {
				pc.RuntimeParams = map[string]string{}
			}
			pc.RuntimeParams["application_name"] = "weir sink " + s.name
			pc.RuntimeParams["statement_timeout"] = strconv.FormatInt(s.cfg.CallTimeout.Milliseconds(), 10)
			db = stdlib.OpenDB(*pc)
			db.SetMaxOpenConns(4)
		}
		pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		err := db.PingContext(pctx)
		cancel()
		if err != nil {
			db.Close()
			return nil, nil, err
		}
		cat, err := sqlcat.NewCatalog(c.Name, db, dialect, props)
		if err != nil {
			db.Close()
			return nil, nil, err
		}
		return cat, func() { db.Close() }, nil
	}
	return nil, nil, permanent(fmt.Errorf("catalog.type %q is not a catalog type", c.Type))
}

// permanentError is an error no retry can fix (a missing variable, a bad
// password): the wait at start ends at once.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return &permanentError{err} }

// retryable reports whether err may go away by itself: the server or the
// storage is not reachable, or not answering, for now.
func retryable(err error) bool {
	if err == nil {
		return false
	}
	var p *permanentError
	if errors.As(err, &p) {
		return false
	}
	var sqlState interface{ SQLState() string }
	if errors.As(err, &sqlState) {
		code := sqlState.SQLState()
		// 08: connection exceptions; 57P0x: the server shutting down or
		// starting; 53: out of resources.
		return strings.HasPrefix(code, "08") || strings.HasPrefix(code, "57P") || strings.HasPrefix(code, "53")
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return true
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, rest.ErrServiceUnavailable) || errors.Is(err, rest.ErrServerError) {
		return true
	}
	msg := err.Error()
	for _, m := range []string{"connection refused", "connection reset", "i/o timeout", "no such host", "EOF", "503", "502", "504", "database is locked", "failed to connect"} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}
