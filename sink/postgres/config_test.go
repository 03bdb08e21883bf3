package postgres

import (
	"errors"
	"strings"
	"testing"

	"github.com/weir-etl/weir/connector"
)

func validConfig() *Config {
	c := NewConfig()
	c.URL = "postgres://weir@127.0.0.1:5432/app"
	c.Table = "orders"
	c.Columns = []Column{{Name: "id", Type: "bigint"}, {Name: "doc", Type: "jsonb", Value: true}}
	return c
}

func TestValidateAcceptsAValidConfig(t *testing.T) {
	if err := validConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

// Every problem is reported at once, each at its own option.
func TestValidateReportsEveryProblem(t *testing.T) {
	c := validConfig()
	c.URL = "postgres://weir:hunter2secret@db/app"
	c.PasswordEnv = "hunter2 secret" // a password written in the wrong option
	c.Table = ""
	c.Mode = "upsert"
	c.Key = []string{"nope"}
	c.Columns = append(c.Columns, Column{Name: "id", Type: "varchar(3)"}, Column{Name: "x", Type: "bigint", Value: true})
	c.TLS.Mode = "verify-full"
	c.StatementTimeout = 0
	err := c.Validate()
	fields, other := connector.FieldErrors(err)
	if len(other) > 0 {
		t.Fatalf("errors without a field: %v", other)
	}
	got := map[string]bool{}
	for _, f := range fields {
		got[f.Field] = true
	}
	for _, want := range []string{"url", "password_env", "table", "key[0]", "columns[2].name", "columns[2].type", "columns[3].type", "tls.ca_file", "statement_timeout"} {
		if !got[want] {
			t.Errorf("no problem reported at %s; got %v", want, err)
		}
	}
	// The URL held a password, and so did password_env: no message may show them.
	if strings.Contains(err.Error(), "hunter2secret") || strings.Contains(err.Error(), "hunter2 secret") {
		t.Fatalf("the password shows in %q", err)
	}
}

func TestIdentifiers(t *testing.T) {
	if q := quoteIdent(`we"ird name`); q != `"we""ird name"` {
		t.Fatalf("quoted %s", q)
	}
	for _, bad := range []string{"", strings.Repeat("x", 64), "a\x00b", "\xff"} {
		if checkIdent(bad) == nil {
			t.Errorf("%q accepted as a name", bad)
		}
	}
	q, err := parseQualified("audit.weir_positions", "public")
	if err != nil || q.sql() != `"audit"."weir_positions"` {
		t.Fatalf("%v %v", q, err)
	}
	if _, err := parseQualified("a.", "public"); err == nil {
		t.Fatal(`"a." accepted`)
	}
}

func TestParseType(t *testing.T) {
	for in, want := range map[string]string{"BIGINT": "bigint", "int": "integer", "Numeric(10, 2)": "numeric(10,2)",
		"timestamp  with time zone": "timestamptz", "decimal": "numeric", "float8": "double precision"} {
		got, err := parseType(in)
		if err != nil || got.sql() != want {
			t.Errorf("%q: %v %v, want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"varchar", "numeric(0)", "numeric(5,6)", "timestamp"} {
		if _, err := parseType(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestNewRejectsInvalid(t *testing.T) {
	c := validConfig()
	c.Table = ""
	_, err := New("db", c)
	var fe *connector.FieldError
	if !errors.As(err, &fe) || fe.Field != "table" {
		t.Fatalf("New: %v", err)
	}
}
