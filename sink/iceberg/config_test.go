package iceberg

import (
	"strings"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/testkit/kafkatest"
)

// Every problem is reported at once, each at its option, with the fix.
func TestValidateNamesEveryField(t *testing.T) {
	c := NewConfig()
	c.Catalog.URI = "postgres://weir:hunter2@db/cat"
	c.Catalog.PasswordEnv = "s3cr3t value"
	c.Catalog.Properties = map[string]string{"token": "x"}
	c.Table = "a.b"
	c.CreateTable = true
	c.Columns = []Column{{Name: "id", Type: "varchar"}, {Name: "id", Type: "long"}, {Name: "doc", Value: true, Type: "long"}}
	c.Partition = []PartitionField{{Column: "nope", Transform: "weekly"}}
	c.TargetFileSize = 10
	c.ConnectTimeout = 0
	err := c.Validate()
	fields, other := connector.FieldErrors(err)
	if len(other) > 0 {
		t.Fatalf("errors without a field: %v", other)
	}
	got := map[string]string{}
	for _, f := range fields {
		got[f.Field] = f.Msg
	}
	for _, want := range []string{"catalog.uri", "catalog.warehouse", "catalog.password_env", "catalog.properties.token", "namespace", "table",
		"columns[0].type", "columns[1].name", "columns[2].type", "partition[0].column", "partition[0].transform", "target_file_size", "connect_timeout"} {
		if _, ok := got[want]; !ok {
			t.Errorf("no error for %s; got %v", want, got)
		}
	}
	for _, f := range fields {
		if strings.Contains(f.Msg, "hunter2") || strings.Contains(f.Msg, "s3cr3t") {
			t.Errorf("%s shows a secret: %s", f.Field, f.Msg)
		}
	}
}

func TestDefaultsAreValid(t *testing.T) {
	c := NewConfig()
	c.Catalog.URI = "sqlite:///tmp/x.db"
	c.Catalog.Warehouse = "/tmp/wh"
	c.Namespace, c.Table = "db", "t"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestDocTags(t *testing.T) { kafkatest.CheckDocTags(t, reflectConfig) }
