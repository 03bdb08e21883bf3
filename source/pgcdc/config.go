package pgcdc

import (
	"errors"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/reach"
)

// Config is the source's configuration, the options under a
// `type: postgres_cdc` source. NewConfig fills in the defaults.
type Config struct {
	URL         string `yaml:"url" doc:"The database to capture, as a libpq URL without a password: postgres://user@host:5432/db?sslmode=verify-full&sslrootcert=/etc/ca.pem. TLS is set with the URL's sslmode, sslrootcert, sslcert and sslkey."`
	PasswordEnv string `yaml:"password_env" doc:"The environment variable that holds the password. Empty uses libpq's own places (PGPASSWORD, ~/.pgpass). The password is never logged nor put in an error."`
	Slot        string `yaml:"slot" doc:"The logical replication slot (pgoutput). Created when missing; weir never drops it unless drop_slot_on_close is set."`
	Publication string `yaml:"publication" doc:"The publication whose tables are captured."`
	// CreatePublication creates the publication for Tables when it is missing.
	CreatePublication bool     `yaml:"create_publication" doc:"Create the publication for tables when it does not exist (needs the CREATE privilege on the database and ownership of the tables)."`
	Tables            []string `yaml:"tables" doc:"The tables to capture, schema.table (public when no schema is given). Empty means every table of the publication. The publication must publish exactly these."`
	Snapshot          string   `yaml:"snapshot" doc:"initial (read the tables once, when the slot is created), always (at every start), or never (stream changes only)."`
	SnapshotChunkRows int      `yaml:"snapshot_chunk_rows" doc:"Rows the snapshot reads per query, in key order; each chunk is one batch with its own position."`
	DataDir           string   `yaml:"data_dir" doc:"Where the snapshot's progress is kept, so that a stopped snapshot resumes. Required unless snapshot is never."`
	MaxBatchRecords   int      `yaml:"max_batch_records" doc:"The most changes in one batch. Batches hold whole transactions; a transaction larger than this is split (see docs/postgres-cdc.md)."`
	MaxBatchBytes     int64    `yaml:"max_batch_bytes" doc:"The most bytes of records in one batch, of changes or of a snapshot chunk (it is cut after the record that reaches it); at most an eighth of the source's max_in_flight_bytes is used, so that the source's own buffers stay within a quarter of it. A transaction larger than this is split like one of too many changes."`
	// StatusInterval bounds the time between two standby status updates.
	StatusInterval      time.Duration `yaml:"status_interval" doc:"The longest time between two status updates to the server, which carry the committed position; keep it below the server's wal_sender_timeout."`
	HeartbeatInterval   time.Duration `yaml:"heartbeat_interval" doc:"How often a heartbeat (pg_logical_emit_message) is written so that the slot advances while the captured tables are idle; 0 turns it off."`
	WALCheckInterval    time.Duration `yaml:"wal_check_interval" doc:"How often the WAL the slot retains is measured and logged."`
	RetainedWALWarning  int64         `yaml:"retained_wal_warning_bytes" doc:"Retained WAL above this many bytes is logged as a warning."`
	ReconnectBackoff    time.Duration `yaml:"reconnect_backoff" doc:"The first wait before reconnecting after the connection is lost; it doubles up to reconnect_backoff_max."`
	ReconnectBackoffMax time.Duration `yaml:"reconnect_backoff_max" doc:"The longest wait between two reconnection attempts."`
	DropSlotOnClose     bool          `yaml:"drop_slot_on_close" doc:"Drop the slot when the pipeline stops gracefully (for throw-away pipelines: the next start snapshots again)."`
	// ConnectTimeout bounds the wait at start (see package reach).
	ConnectTimeout time.Duration `yaml:"connect_timeout" doc:"How long the source waits at start for the server to answer and for the slot to be free (another consumer holding it is named, with its process id and application_name), retrying with backoff and logging each failure, before it fails (exit code 3). Bad credentials, a missing database, slot or publication fail at once."`
}

// Defaults.
const (
	DefaultSnapshotChunkRows  = 10000
	DefaultMaxBatchRecords    = 2000
	DefaultMaxBatchBytes      = 4 << 20
	DefaultStatusInterval     = 10 * time.Second
	DefaultHeartbeatInterval  = 30 * time.Second
	DefaultWALCheckInterval   = time.Minute
	DefaultRetainedWALWarning = 1 << 30
)

// NewConfig returns a Config with the defaults filled in.
func NewConfig() *Config {
	return &Config{
		Snapshot:            "initial",
		SnapshotChunkRows:   DefaultSnapshotChunkRows,
		MaxBatchRecords:     DefaultMaxBatchRecords,
		MaxBatchBytes:       DefaultMaxBatchBytes,
		StatusInterval:      DefaultStatusInterval,
		HeartbeatInterval:   DefaultHeartbeatInterval,
		WALCheckInterval:    DefaultWALCheckInterval,
		RetainedWALWarning:  DefaultRetainedWALWarning,
		ReconnectBackoff:    200 * time.Millisecond,
		ReconnectBackoffMax: 30 * time.Second,
		ConnectTimeout:      reach.DefaultTimeout,
	}
}

// PostgreSQL's names: a slot is lower case letters, digits and underscores;
// an identifier here is the same plus upper case, which keeps quoting simple.
var (
	slotName  = regexp.MustCompile(`^[a-z0-9_]{1,63}$`)
	identName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]{0,62}$`)
	envName   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Validate reports every problem with c at once, each naming its option and
// the fix.
func (c *Config) Validate() error {
	var errs []error
	add := func(field, format string, args ...any) { errs = append(errs, connector.Fieldf(field, format, args...)) }

	if c.URL == "" {
		add("url", "is empty: give the database as postgres://user@host:5432/dbname")
	} else if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		// The URL is not repeated: it may hold a password.
		add("url", "is not a postgres:// URL: write postgres://user@host:5432/dbname")
	} else {
		if _, has := u.User.Password(); has {
			add("url", "holds a password: remove it from the URL and name the environment variable that holds it in password_env")
		}
		q := u.Query()
		if q.Has("password") {
			add("url", "holds a password parameter: remove it and name the environment variable that holds it in password_env")
		}
		if q.Has("replication") {
			add("url", "sets replication: remove it; the source opens its replication connection itself")
		}
		if strings.Trim(u.Path, "/") == "" && !q.Has("dbname") {
			add("url", "names no database: add it as the path, postgres://user@host:5432/dbname")
		}
		switch m := q.Get("sslmode"); m {
		case "", "disable", "allow", "prefer", "require", "verify-ca", "verify-full":
		default:
			add("url", "sslmode %q is not valid: use disable, allow, prefer, require, verify-ca or verify-full", m)
		}
	}
	if c.PasswordEnv != "" && !envName.MatchString(c.PasswordEnv) {
		add("password_env", "%q is not an environment variable name: letters, digits and _, e.g. PGPASSWORD", c.PasswordEnv)
	}
	if !slotName.MatchString(c.Slot) {
		add("slot", "%q is not a slot name: 1 to 63 lower case letters, digits or _, e.g. weir_orders", c.Slot)
	}
	if !identName.MatchString(c.Publication) {
		add("publication", "%q is not a publication name: a letter or _, then letters, digits, _ or $ (up to 63), e.g. weir_orders", c.Publication)
	}
	for i, t := range c.Tables {
		if _, _, ok := splitTable(t); !ok {
			add(fieldIndex("tables", i), "%q is not a table name: write schema.table or table, with letters, digits, _ or $", t)
		}
	}
	if c.CreatePublication && len(c.Tables) == 0 {
		add("create_publication", "is set but tables is empty: list the tables the publication is created for")
	}
	switch c.Snapshot {
	case "initial", "always", "never":
	default:
		add("snapshot", "%q is not valid: use initial, always or never", c.Snapshot)
	}
	if c.Snapshot != "never" && c.DataDir == "" {
		add("data_dir", "is empty: set a directory where the snapshot's progress is kept, e.g. ./state (or set snapshot: never)")
	}
	if c.SnapshotChunkRows < 1 {
		add("snapshot_chunk_rows", "is %d: it must be at least 1, e.g. %d", c.SnapshotChunkRows, DefaultSnapshotChunkRows)
	}
	if c.MaxBatchRecords < 1 {
		add("max_batch_records", "is %d: it must be at least 1, e.g. %d", c.MaxBatchRecords, DefaultMaxBatchRecords)
	}
	if c.MaxBatchBytes < 1<<10 {
		add("max_batch_bytes", "is %d: it must be at least 1KiB, e.g. 4MiB", c.MaxBatchBytes)
	}
	if c.StatusInterval < 10*time.Millisecond {
		add("status_interval", "%v is too short: use at least 10ms, e.g. 10s", c.StatusInterval)
	}
	if c.HeartbeatInterval < 0 || (c.HeartbeatInterval > 0 && c.HeartbeatInterval < 10*time.Millisecond) {
		add("heartbeat_interval", "%v is not valid: use 0 (off) or at least 10ms, e.g. 30s", c.HeartbeatInterval)
	}
	if c.WALCheckInterval < 10*time.Millisecond {
		add("wal_check_interval", "%v is too short: use at least 10ms, e.g. 1m", c.WALCheckInterval)
	}
	if c.RetainedWALWarning < 0 {
		add("retained_wal_warning_bytes", "is %d: it must be 0 or more", c.RetainedWALWarning)
	}
	if c.ReconnectBackoff < time.Millisecond {
		add("reconnect_backoff", "%v is too short: use at least 1ms, e.g. 200ms", c.ReconnectBackoff)
	}
	if c.ConnectTimeout < time.Second {
		add("connect_timeout", "%v is too short: use at least 1s (the default is %v)", c.ConnectTimeout, reach.DefaultTimeout)
	}
	if c.ReconnectBackoffMax < c.ReconnectBackoff {
		add("reconnect_backoff_max", "%v is below reconnect_backoff (%v): raise it, e.g. 30s", c.ReconnectBackoffMax, c.ReconnectBackoff)
	}
	return errors.Join(errs...)
}

func fieldIndex(name string, i int) string { return name + "[" + strconv.Itoa(i) + "]" }

// splitTable splits "schema.table" or "table" (schema public).
func splitTable(s string) (schema, table string, ok bool) {
	schema, table, found := strings.Cut(s, ".")
	if !found {
		schema, table = "public", s
	}
	return schema, table, identName.MatchString(schema) && identName.MatchString(table)
}
