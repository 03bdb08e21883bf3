package postgres

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/reach"
)

// Config is the sink's configuration, the options under a `type: postgres`
// sink. NewConfig fills in the defaults.
type Config struct {
	URL         string `yaml:"url" doc:"The server and database, as a postgres:// URL without a password (postgres://weir@db:5432/app). Connection parameters such as sslmode may follow in the query."`
	PasswordEnv string `yaml:"password_env" doc:"The environment variable that holds the password. The password is never logged nor shown in an error; empty means no password (trust or certificate authentication)."`
	TLS         TLS    `yaml:"tls" doc:"Encryption to the server; the URL's sslmode applies when tls.mode is empty."`

	Schema  string   `yaml:"schema" doc:"The schema of the table."`
	Table   string   `yaml:"table" doc:"The table the rows go to, exactly as written (names are quoted: Orders and orders are two tables)."`
	Columns []Column `yaml:"columns" doc:"The table's columns and where each one's value comes from."`
	Mode    string   `yaml:"mode" doc:"insert writes every record as a new row with COPY; upsert inserts or updates by key, the last record of a key in a group winning."`
	Key     []string `yaml:"key" doc:"The key columns: the ON CONFLICT target in upsert mode (the table needs a unique index on them), and the primary key create_table gives the table."`
	// CreateTable creates the table when it is missing.
	CreateTable bool `yaml:"create_table" doc:"Create the table from columns and key when it does not exist."`

	Pipeline       string `yaml:"pipeline" doc:"The name the stored positions are filed under, with the sink's and the source's names; empty means schema.table. Changing it forgets the positions (records are written again)."`
	PositionsTable string `yaml:"positions_table" doc:"The table of stored positions, [schema.]name; created when missing. It is written in the same transaction as the rows."`

	MaxConns         int           `yaml:"max_conns" doc:"The most connections the sink holds open. Sealed groups copy their rows ahead of their commit on up to max_conns - 1 of them; 1 turns that off."`
	ConnectTimeout   time.Duration `yaml:"connect_timeout" doc:"How long the sink waits at start for the server to answer, retrying with backoff and logging each failure, before it fails (exit code 3). Bad credentials, a missing database or a refused certificate fail at once. Each attempt, and each connection the sink opens later, takes at most 10s of it."`
	StatementTimeout time.Duration `yaml:"statement_timeout" doc:"The most time one statement may take, set as the session's statement_timeout; the client gives up on a server that does not answer shortly after."`
	MaxGroupRecords  int           `yaml:"max_group_records" doc:"The most rows one transaction may hold: a group beyond it fails with an error saying to lower batch.max_records."`
	MaxGroupBytes    int64         `yaml:"max_group_bytes" doc:"The most bytes of encoded rows one transaction may hold, likewise."`
}

// Column is one column of the table and the record data that fills it.
type Column struct {
	Name string `yaml:"name" doc:"The column's name, exactly as written."`
	Type string `yaml:"type" doc:"text, smallint, integer, bigint, numeric, numeric(p,s), double precision, boolean, timestamptz, jsonb, json or bytea."`
	// Field and Value are exclusive; neither means Field = Name.
	Field string `yaml:"field" doc:"The record field that fills the column; a dotted path reaches into objects (payment.amount). Empty means the column's name."`
	Value bool   `yaml:"value" doc:"Fill the column with the whole record value (for jsonb, json, text or bytea columns) instead of a field."`
}

// TLS configures encryption to the server.
type TLS struct {
	Mode     string `yaml:"mode" doc:"disable, prefer, require, verify-ca or verify-full (as libpq's sslmode). verify-full checks the server's certificate and name."`
	CAFile   string `yaml:"ca_file" doc:"The CA certificates (PEM) that verify the server; needed by verify-ca and verify-full."`
	CertFile string `yaml:"cert_file" doc:"The client certificate (PEM), for certificate authentication; goes with key_file."`
	KeyFile  string `yaml:"key_file" doc:"The client certificate's private key (PEM)."`
}

// Defaults.
const (
	DefaultPasswordEnv      = "PGPASSWORD"
	DefaultSchema           = "public"
	DefaultPositionsTable   = "weir_positions"
	DefaultMaxConns         = 4
	DefaultConnectTimeout   = reach.DefaultTimeout
	DefaultStatementTimeout = 60 * time.Second
	DefaultMaxGroupRecords  = 200_000
	DefaultMaxGroupBytes    = 128 << 20
)

// Modes.
const (
	ModeInsert = "insert"
	ModeUpsert = "upsert"
)

// NewConfig returns a Config with the defaults filled in.
func NewConfig() *Config {
	return &Config{
		PasswordEnv:      DefaultPasswordEnv,
		Schema:           DefaultSchema,
		Mode:             ModeInsert,
		PositionsTable:   DefaultPositionsTable,
		MaxConns:         DefaultMaxConns,
		ConnectTimeout:   DefaultConnectTimeout,
		StatementTimeout: DefaultStatementTimeout,
		MaxGroupRecords:  DefaultMaxGroupRecords,
		MaxGroupBytes:    DefaultMaxGroupBytes,
	}
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var tlsModes = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}

// Validate returns every problem with c at once, each a connector.FieldError
// naming the option and the fix. It never shows the URL: it may hold a
// password, which is the one thing it must not hold.
func (c *Config) Validate() error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, connector.Fieldf(field, format, args...))
	}
	if c.URL == "" {
		add("url", "is empty: give the server and database, e.g. postgres://weir@127.0.0.1:5432/app")
	} else if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		add("url", "is not a postgres:// URL: write it as postgres://USER@HOST:PORT/DATABASE")
	} else {
		if _, has := u.User.Password(); has {
			add("url", "holds a password: remove it from the URL and put it in the environment variable that password_env names")
		}
		q := u.Query()
		if q.Has("password") {
			add("url", "holds a password parameter: remove it and put the password in the environment variable that password_env names")
		}
		if c.TLS.Mode != "" && q.Has("sslmode") {
			add("tls.mode", "is set and the url has sslmode too: keep one of them")
		}
	}
	if c.PasswordEnv != "" && !envName.MatchString(c.PasswordEnv) {
		// Not shown: a password written here by mistake must not reach a log.
		add("password_env", "is not an environment variable name: give the variable's name, such as PGPASSWORD, not the password")
	}
	if c.TLS.Mode != "" && !slices.Contains(tlsModes, c.TLS.Mode) {
		add("tls.mode", "%q is not a mode: use one of %s", c.TLS.Mode, strings.Join(tlsModes, ", "))
	}
	if (c.TLS.Mode == "verify-ca" || c.TLS.Mode == "verify-full") && c.TLS.CAFile == "" {
		add("tls.ca_file", "is empty: tls.mode %s verifies the server's certificate against it", c.TLS.Mode)
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		add("tls.cert_file", "and tls.key_file go together: give both for a client certificate, or neither")
	}
	for _, f := range []struct{ name, path string }{{"tls.ca_file", c.TLS.CAFile}, {"tls.cert_file", c.TLS.CertFile}, {"tls.key_file", c.TLS.KeyFile}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			add(f.name, "%s cannot be read: %v", f.path, errors.Unwrap(err))
		}
	}
	if err := checkIdent(c.Schema); err != nil {
		add("schema", "%v", err)
	}
	if c.Table == "" {
		add("table", "is empty: name the table the rows go to")
	} else if err := checkIdent(c.Table); err != nil {
		add("table", "%v", err)
	}
	if _, err := parseQualified(c.PositionsTable, c.Schema); err != nil {
		add("positions_table", "%v", err)
	}
	if c.Pipeline != "" && !utf8Clean(c.Pipeline) {
		add("pipeline", "must be valid UTF-8 without NUL characters")
	}
	errs = append(errs, c.validateColumns()...)
	if c.MaxConns < 1 {
		add("max_conns", "is %d: it must be at least 1", c.MaxConns)
	}
	if c.ConnectTimeout < time.Second {
		add("connect_timeout", "%v is too short: use at least 1s (the default is %v)", c.ConnectTimeout, DefaultConnectTimeout)
	}
	if c.StatementTimeout < time.Millisecond {
		add("statement_timeout", "must be at least 1ms, e.g. 60s")
	}
	if c.MaxGroupRecords < 1 {
		add("max_group_records", "is %d: it must be at least 1", c.MaxGroupRecords)
	}
	if c.MaxGroupBytes < 1<<10 {
		add("max_group_bytes", "is %d: it must be at least 1024", c.MaxGroupBytes)
	}
	return errors.Join(errs...)
}

func (c *Config) validateColumns() []error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, connector.Fieldf(field, format, args...))
	}
	if len(c.Columns) == 0 {
		add("columns", "is empty: list the table's columns, e.g. [{name: id, type: bigint}, {name: doc, type: jsonb, value: true}]")
	}
	seen := map[string]bool{}
	for i, col := range c.Columns {
		f := fmt.Sprintf("columns[%d]", i)
		if err := checkIdent(col.Name); err != nil {
			add(f+".name", "%v", err)
		} else if seen[col.Name] {
			add(f+".name", "%q is listed twice", col.Name)
		} else if col.Name == seqColumnName && c.Mode == ModeUpsert {
			add(f+".name", "%q is the name upsert mode gives its staging table's order column: rename the column", col.Name)
		}
		seen[col.Name] = true
		t, err := parseType(col.Type)
		if err != nil {
			add(f+".type", "%v", err)
			continue
		}
		if col.Value {
			if col.Field != "" {
				add(f+".field", "is set together with value: true; a column holds a field or the whole record, not both")
			}
			switch t.kind {
			case typeJSONB, typeJSON, typeText, typeBytea:
			default:
				add(f+".type", "is %s, which cannot hold a whole record: use jsonb, json, text or bytea", t)
			}
		}
		if col.Field != "" {
			for _, p := range strings.Split(col.Field, ".") {
				if p == "" {
					add(f+".field", "%q has an empty part: write a field name or a dotted path such as payment.amount", col.Field)
					break
				}
			}
		}
	}
	switch c.Mode {
	case ModeInsert:
	case ModeUpsert:
		if len(c.Key) == 0 {
			add("key", "is empty: upsert mode needs the key columns, e.g. key: [id]")
		}
	default:
		add("mode", "%q is not a mode: use insert or upsert", c.Mode)
	}
	kseen := map[string]bool{}
	for i, k := range c.Key {
		switch {
		case !seen[k]:
			add(fmt.Sprintf("key[%d]", i), "%q is not one of the columns: list it under columns too", k)
		case kseen[k]:
			add(fmt.Sprintf("key[%d]", i), "%q is listed twice", k)
		}
		kseen[k] = true
	}
	return errs
}

func utf8Clean(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }
