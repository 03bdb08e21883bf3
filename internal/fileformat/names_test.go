package fileformat

import (
	"strings"
	"testing"

	"github.com/weir-etl/weir/record"
)

func TestExt(t *testing.T) {
	for _, c := range [][3]string{
		{"ndjson", "none", ".ndjson"}, {"ndjson", "gzip", ".ndjson.gz"}, {"lines", "zstd", ".txt.zst"},
		{"parquet", "zstd", ".parquet"}, {"parquet", "none", ".parquet"},
	} {
		if got := Ext(c[0], c[1]); got != c[2] {
			t.Errorf("Ext(%s, %s) = %s, want %s", c[0], c[1], got, c[2])
		}
	}
}

// A line format holds one value a line: a line break, a carriage return at
// the end, and for ndjson a value that is not JSON, are the record's fault.
func TestCheckLine(t *testing.T) {
	for _, c := range []struct {
		format, value, want string
	}{
		{"ndjson", `{"a":1}`, ""},
		{"lines", "not json", ""},
		{"ndjson", "not json", "not one JSON value"},
		{"lines", "a\nb", "line break"},
		{"lines", "a\r", "carriage return"},
	} {
		r := record.New([]byte(c.value))
		err := CheckLine(c.format, &r, r.Bytes())
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckLine(%s, %q) = %v, want %q", c.format, c.value, err, c.want)
		}
	}
}

// A CSV row is an object of the header's names, in order, each field a
// string exactly as written.
func TestCSVObject(t *testing.T) {
	fields, err := SplitCSV(nil, []byte("1,\"a,\"\"b\"\"\",\xff\r"), ',')
	if err != nil {
		t.Fatal(err)
	}
	h := []string{"id", "name", "raw"}
	b := AppendCSVObject(make([]byte, 0, CSVObjectSize(h, fields)), h, fields)
	if want := "{\"id\":\"1\",\"name\":\"a,\\\"b\\\"\",\"raw\":\"\xff\"}"; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	if err := CheckType("decimal(10,2)"); err != nil {
		t.Fatal(err)
	}
	if err := CheckType("decimal(x)"); err == nil {
		t.Fatal("CheckType accepted decimal(x)")
	}
}
