package iceberg

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/weir-etl/weir/connector"
)

// Config is the sink's configuration, the options under a `type: iceberg`
// sink. NewConfig fills in the defaults.
type Config struct {
	Catalog   Catalog `yaml:"catalog" doc:"The catalog that holds the table: sql (PostgreSQL or SQLite) or rest."`
	Namespace string  `yaml:"namespace" doc:"The table's namespace; dots separate levels (analytics.raw)."`
	Table     string  `yaml:"table" doc:"The table's name within the namespace."`

	CreateTable bool              `yaml:"create_table" doc:"Create the table (and its namespace) from columns and partition when it does not exist. Otherwise the table must exist."`
	Location    string            `yaml:"location" doc:"Where a table made by create_table keeps its files; empty means the catalog's warehouse/namespace/table."`
	Columns     []Column          `yaml:"columns" doc:"The table's columns and the record fields that fill them. Empty, with an existing table, fills every top-level column from the field of its name. A column listed here that the table lacks is added to the table at start (schema evolution)."`
	Partition   []PartitionField  `yaml:"partition" doc:"The partition spec of a table made by create_table: a list of {column, transform} with transform identity, year, month, day, hour, bucket[N] or truncate[W]."`
	Properties  map[string]string `yaml:"properties" doc:"Table properties given to a table made by create_table (write.parquet.compression-codec, ...)."`

	Pipeline       string        `yaml:"pipeline" doc:"The name the positions in each snapshot's summary are filed under, with the sink's name; empty means namespace.table. Changing it forgets the positions (records are written again)."`
	TargetFileSize int64         `yaml:"target_file_size" doc:"The size a data file is cut at within one commit; a commit of less data writes smaller files." unit:"bytes"`
	CleanupMinAge  time.Duration `yaml:"cleanup_min_age" doc:"At start the sink deletes the data files it wrote but never committed (a crash between the write and the commit) once they are this old. 0 deletes them all at once: right when this sink is the table's only writer under its pipeline name (a file source); keep it above the longest commit when several processes write (a Kafka group): a process never commits a file older than half of it."`
	ConnectTimeout time.Duration `yaml:"connect_timeout" doc:"How long the sink waits at start for the catalog and the storage to answer, retrying with backoff and logging each failure, before it fails."`
	CallTimeout    time.Duration `yaml:"call_timeout" doc:"The most time one call to the catalog or the storage may take (a commit, a file upload)."`
	CommitRetries  int           `yaml:"commit_retries" doc:"How often a commit that lost a race to another writer is tried again, re-reading the table's positions each time, before the flush fails (and the runtime writes the group again)."`

	S3 S3 `yaml:"s3" doc:"Settings of an s3:// warehouse. Credentials come from the AWS SDK's default chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, a profile, an instance role), never from this file."`
}

// Catalog says where the table's metadata pointer lives.
type Catalog struct {
	Type string `yaml:"type" doc:"sql (iceberg-go's SQL catalog, on PostgreSQL or SQLite) or rest (an Iceberg REST catalog server)."`
	URI  string `yaml:"uri" doc:"sql: a postgres:// URL without a password, or sqlite:///path/to/catalog.db; rest: the server's http(s):// URL."`
	Name string `yaml:"name" doc:"The catalog's name: the SQL catalog files its tables under it (catalog_name); readers such as pyiceberg must use the same."`

	Warehouse   string `yaml:"warehouse" doc:"The root of the tables' files: a local directory (/data/warehouse or file:///data/warehouse) or s3://bucket/prefix. For rest, the warehouse the server is asked for (it may choose the locations itself)."`
	PasswordEnv string `yaml:"password_env" doc:"sql on PostgreSQL: the environment variable that holds the password; never logged. Empty means none."`
	TokenEnv    string `yaml:"token_env" doc:"rest: the environment variable that holds a bearer token; never logged."`
	// CredentialEnv holds an OAuth2 client credential, client_id:secret.
	CredentialEnv string            `yaml:"credential_env" doc:"rest: the environment variable that holds an OAuth2 client credential (client_id:client_secret) exchanged for a token; never logged."`
	Properties    map[string]string `yaml:"properties" doc:"More catalog properties, as iceberg-go names them (rest: prefix, scope, ...). Secrets do not belong here: use the *_env options."`
}

// Column is one column of the table and the record data that fills it.
type Column struct {
	Name     string `yaml:"name" doc:"The column's name."`
	Type     string `yaml:"type" doc:"An Iceberg type: boolean, int, long, float, double, decimal(p,s), string, binary, date, timestamp, timestamptz, struct<a: long, b: string>, list<T> or map<K, V>. May be left out for a column the table already has."`
	Field    string `yaml:"field" doc:"The record field that fills the column; a dotted path reaches into objects (payment.amount). Empty means the column's name, taken as one field."`
	Value    bool   `yaml:"value" doc:"Fill the column (a string) with the whole record value, its JSON byte for byte, instead of a field."`
	Required bool   `yaml:"required" doc:"The column is required (not null): a record without the field is rejected. Applies to a table made by create_table and to a column added."`
	Doc      string `yaml:"doc" doc:"The column's documentation in the table's schema."`
}

// PartitionField is one field of the partition spec.
type PartitionField struct {
	Column    string `yaml:"column" doc:"The source column (a top-level column, or a dotted path into a struct)."`
	Transform string `yaml:"transform" doc:"identity, year, month, day, hour, bucket[N] or truncate[W]."`
	Name      string `yaml:"name" doc:"The partition field's name; empty means column_transform (id_bucket, ts_day) or the column for identity."`
}

// S3 configures an s3:// warehouse.
type S3 struct {
	Endpoint  string `yaml:"endpoint" doc:"The S3 endpoint URL for a server other than AWS (http://127.0.0.1:7070); empty means AWS, or AWS_ENDPOINT_URL_S3."`
	Region    string `yaml:"region" doc:"The bucket's region; empty means the SDK's (AWS_REGION)."`
	PathStyle bool   `yaml:"path_style" doc:"Address buckets by path (endpoint/bucket/key) instead of by host name; most servers other than AWS need it."`
}

// Defaults.
const (
	DefaultCatalogName    = "weir"
	DefaultTargetFileSize = 128 << 20
	DefaultCleanupMinAge  = 30 * time.Minute
	DefaultConnectTimeout = 30 * time.Second
	DefaultCallTimeout    = 2 * time.Minute
	DefaultCommitRetries  = 20
)

// Catalog types.
const (
	CatalogSQL  = "sql"
	CatalogREST = "rest"
)

// NewConfig returns a Config with the defaults filled in.
func NewConfig() *Config {
	return &Config{
		Catalog:        Catalog{Type: CatalogSQL, Name: DefaultCatalogName},
		TargetFileSize: DefaultTargetFileSize,
		CleanupMinAge:  DefaultCleanupMinAge,
		ConnectTimeout: DefaultConnectTimeout,
		CallTimeout:    DefaultCallTimeout,
		CommitRetries:  DefaultCommitRetries,
	}
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate returns every problem with c at once, each a connector.FieldError
// naming the option and the fix. It never shows a URI's user part.
func (c *Config) Validate() error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, connector.Fieldf(field, format, args...))
	}
	errs = append(errs, c.Catalog.validate()...)
	if c.Namespace == "" {
		add("namespace", "is empty: name the table's namespace, e.g. namespace: analytics")
	} else if slices.Contains(strings.Split(c.Namespace, "."), "") {
		add("namespace", "%q has an empty level: write levels separated by single dots, e.g. analytics.raw", c.Namespace)
	}
	if c.Table == "" {
		add("table", "is empty: name the table, e.g. table: events")
	} else if strings.ContainsAny(c.Table, "./") {
		add("table", "%q holds a dot or a slash: give the table's own name; the namespace goes in namespace", c.Table)
	}
	if c.Location != "" && !c.CreateTable {
		add("location", "is set without create_table: the location of an existing table is the table's own")
	}
	if c.CreateTable && len(c.Columns) == 0 {
		add("columns", "is empty: create_table needs the table's columns, e.g. [{name: id, type: long, required: true}, {name: ts, type: timestamptz}]")
	}
	errs = append(errs, c.validateColumns()...)
	if len(c.Partition) > 0 && !c.CreateTable {
		add("partition", "is set without create_table: the partition spec of an existing table is the table's own (change it with your engine's ALTER TABLE)")
	}
	for i, p := range c.Partition {
		f := fmt.Sprintf("partition[%d]", i)
		if p.Column == "" {
			add(f+".column", "is empty: name the column to partition by")
		} else if c.column(p.Column) == nil && c.CreateTable {
			add(f+".column", "%q is not one of columns", p.Column)
		}
		if _, err := iceberg.ParseTransform(p.Transform); err != nil || p.Transform == "" {
			add(f+".transform", "%q is not a transform: use identity, year, month, day, hour, bucket[N] or truncate[W]", p.Transform)
		} else if !slices.Contains([]string{"identity", "year", "month", "day", "hour"}, p.Transform) &&
			!strings.HasPrefix(p.Transform, "bucket[") && !strings.HasPrefix(p.Transform, "truncate[") {
			add(f+".transform", "%q is not offered: use identity, year, month, day, hour, bucket[N] or truncate[W]", p.Transform)
		}
	}
	if c.TargetFileSize < 1<<20 {
		add("target_file_size", "is %d bytes: use at least 1MiB, e.g. 128MiB", c.TargetFileSize)
	}
	if c.CleanupMinAge < 0 {
		add("cleanup_min_age", "must not be negative, e.g. 30m, or 0 for a table this sink alone writes")
	}
	if c.ConnectTimeout < time.Second {
		add("connect_timeout", "%v is too short: use at least 1s (the default is %v)", c.ConnectTimeout, DefaultConnectTimeout)
	}
	if c.CallTimeout < time.Second {
		add("call_timeout", "%v is too short: use at least 1s (the default is %v)", c.CallTimeout, DefaultCallTimeout)
	}
	if c.CommitRetries < 0 {
		add("commit_retries", "must not be negative")
	}
	if c.S3.Endpoint != "" {
		if u, err := url.Parse(c.S3.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("s3.endpoint", "%q is not an http(s):// URL", c.S3.Endpoint)
		}
	}
	return errors.Join(errs...)
}

func (c *Catalog) validate() []error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, connector.Fieldf("catalog."+field, format, args...))
	}
	switch c.Type {
	case CatalogSQL:
		switch {
		case c.URI == "":
			add("uri", "is empty: give postgres://USER@HOST:PORT/DATABASE or sqlite:///path/to/catalog.db")
		case strings.HasPrefix(c.URI, "sqlite:"):
			if sqlitePath(c.URI) == "" {
				add("uri", "names no file: write sqlite:///path/to/catalog.db")
			}
		default:
			u, err := url.Parse(c.URI)
			if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
				add("uri", "is neither postgres://... nor sqlite:///...: the sql catalog runs on PostgreSQL or SQLite")
			} else if _, has := u.User.Password(); has || u.Query().Has("password") {
				add("uri", "holds a password: remove it and put it in the environment variable that password_env names")
			}
		}
		if c.Warehouse == "" {
			add("warehouse", "is empty: the sql catalog needs a warehouse, a directory or s3://bucket/prefix")
		}
	case CatalogREST:
		if u, err := url.Parse(c.URI); c.URI == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("uri", "is not an http(s):// URL: give the REST catalog's address, e.g. http://127.0.0.1:8181")
		} else if u.User != nil {
			add("uri", "holds a user: put a token in the variable token_env names, or a client credential in credential_env's")
		}
		if c.PasswordEnv != "" {
			add("password_env", "is for the sql catalog on PostgreSQL: a rest catalog takes token_env or credential_env")
		}
	default:
		add("type", "%q is not a catalog type: use sql or rest", c.Type)
	}
	if c.Name == "" {
		add("name", "is empty: name the catalog, e.g. weir")
	}
	if c.Warehouse != "" {
		if u, err := url.Parse(c.Warehouse); err != nil || (u.Scheme != "" && u.Scheme != "file" && u.Scheme != "s3") {
			add("warehouse", "%q is neither a local directory, a file:// URL nor s3://bucket/prefix", c.Warehouse)
		}
	}
	for _, e := range []struct{ field, v string }{{"password_env", c.PasswordEnv}, {"token_env", c.TokenEnv}, {"credential_env", c.CredentialEnv}} {
		if e.v != "" && !envName.MatchString(e.v) {
			// Not shown: a secret written here by mistake must not reach a log.
			add(e.field, "is not an environment variable name: give the variable's name, not its value")
		}
	}
	for k := range c.Properties {
		for _, secret := range []string{"credential", "token", "password", "secret"} {
			if strings.Contains(strings.ToLower(k), secret) {
				add("properties."+k, "looks like a secret: secrets go in environment variables (token_env, credential_env, password_env, the AWS SDK's)")
				break
			}
		}
	}
	return errs
}

func (c *Config) validateColumns() []error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, connector.Fieldf(field, format, args...))
	}
	seen := map[string]bool{}
	ids := 0
	for i, col := range c.Columns {
		f := fmt.Sprintf("columns[%d]", i)
		switch {
		case col.Name == "":
			add(f+".name", "is empty: name the column")
		case seen[col.Name]:
			add(f+".name", "%q is listed twice", col.Name)
		case strings.ContainsAny(col.Name, "."):
			add(f+".name", "%q holds a dot: a top-level column's name cannot (nest with a struct type)", col.Name)
		}
		seen[col.Name] = true
		if col.Value {
			if col.Field != "" {
				add(f+".field", "is set together with value: true; a column holds a field or the whole record, not both")
			}
			if col.Type != "" && col.Type != "string" {
				add(f+".type", "is %q with value: true: the whole record is JSON text, held by a string column", col.Type)
			}
		}
		if col.Type == "" {
			if c.CreateTable && !col.Value {
				add(f+".type", "is empty: create_table needs every column's type (%s)", typeHelp)
			}
			continue
		}
		if _, err := parseType(col.Type, &ids); err != nil {
			add(f+".type", "%v", err)
		}
	}
	return errs
}

// typeOf returns a column's configured type ("" for one the table has).
func (col *Column) typeOf() string {
	if col.Type == "" && col.Value {
		return "string"
	}
	return col.Type
}

func (c *Config) column(name string) *Column {
	top, _, _ := strings.Cut(name, ".")
	for i := range c.Columns {
		if c.Columns[i].Name == top {
			return &c.Columns[i]
		}
	}
	return nil
}

// sqlitePath returns the file of a sqlite: URI ("" when it names none).
func sqlitePath(uri string) string {
	rest := strings.TrimPrefix(uri, "sqlite:")
	rest = strings.TrimPrefix(rest, "//")
	path, _, _ := strings.Cut(rest, "?")
	return path
}

// namespace returns the namespace as levels.
func (c *Config) namespace() []string { return strings.Split(c.Namespace, ".") }

// pipelineName is what the positions are filed under.
func (c *Config) pipelineName() string {
	if c.Pipeline != "" {
		return c.Pipeline
	}
	return c.Namespace + "." + c.Table
}
