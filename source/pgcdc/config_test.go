package pgcdc

import (
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
)

func validConfig() *Config {
	c := NewConfig()
	c.URL = "postgres://weir@db.example:5432/shop?sslmode=verify-full"
	c.Slot = "weir_shop"
	c.Publication = "weir_shop"
	c.Tables = []string{"public.orders", "customers"}
	c.DataDir = "/var/lib/weir"
	return c
}

func TestValidConfig(t *testing.T) {
	if err := validConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	c := validConfig()
	c.Snapshot, c.DataDir = "never", ""
	if err := c.Validate(); err != nil {
		t.Fatalf("snapshot never needs no data_dir: %v", err)
	}
}

// Guarantee: Validate reports every problem at once, each as a FieldError
// naming its option, and never repeats a URL (it may hold a password).
func TestValidateReportsEveryProblem(t *testing.T) {
	c := NewConfig()
	c.URL = "postgres://weir:hunter2@db.example:5432/shop?sslmode=sometimes&replication=database"
	c.PasswordEnv = "1BAD"
	c.Slot = "Bad-Slot"
	c.Publication = ""
	c.Tables = []string{"public.orders", "a.b.c"}
	c.Snapshot = "sometimes"
	c.SnapshotChunkRows = 0
	c.MaxBatchRecords = -1
	c.StatusInterval = time.Millisecond
	c.HeartbeatInterval = -time.Second
	c.ReconnectBackoff = time.Second
	c.ReconnectBackoffMax = time.Millisecond
	err := c.Validate()
	fields, other := connector.FieldErrors(err)
	if len(other) > 0 {
		t.Errorf("errors that name no option: %v", other)
	}
	got := map[string]int{}
	for _, f := range fields {
		got[f.Field]++
		if strings.Contains(f.Msg, "hunter2") {
			t.Errorf("%s: the message shows the password: %s", f.Field, f.Msg)
		}
	}
	for _, want := range []string{"url", "password_env", "slot", "publication", "tables[1]", "snapshot", "data_dir",
		"snapshot_chunk_rows", "max_batch_records", "status_interval", "heartbeat_interval", "reconnect_backoff_max"} {
		if got[want] == 0 {
			t.Errorf("no error for %s; got %v", want, err)
		}
	}
	if got["url"] != 3 {
		t.Errorf("%d url errors, want 3 (password, replication, sslmode): %v", got["url"], err)
	}
	if got["tables[0]"] != 0 {
		t.Errorf("a valid table reported: %v", err)
	}
}

func TestValidateURL(t *testing.T) {
	for url, wantErr := range map[string]string{
		"":                             "is empty",
		"mysql://u@h/db":               "not a postgres:// URL",
		"postgres://u@h:5432":          "names no database",
		"postgres://u@h/db?password=x": "password parameter",
		"postgresql://u@h/db?sslmode=verify-ca&sslrootcert=/ca.pem": "",
		"postgres://u@h1:5432,h2:5432/db":                           "",
	} {
		c := validConfig()
		c.URL = url
		err := c.Validate()
		switch {
		case wantErr == "" && err != nil:
			t.Errorf("%q: %v", url, err)
		case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
			t.Errorf("%q: error %v, want one saying %q", url, err, wantErr)
		}
	}
}

func TestSplitTable(t *testing.T) {
	for in, want := range map[string][2]string{"orders": {"public", "orders"}, "sales.orders": {"sales", "orders"}, "S.T_1": {"S", "T_1"}} {
		s, tb, ok := splitTable(in)
		if !ok || s != want[0] || tb != want[1] {
			t.Errorf("splitTable(%q) = %q %q %v", in, s, tb, ok)
		}
	}
	for _, bad := range []string{"", ".", "a.", "a.b.c", `a"b`, "a b"} {
		if _, _, ok := splitTable(bad); ok {
			t.Errorf("splitTable(%q) accepted", bad)
		}
	}
}
