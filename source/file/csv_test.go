package file

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weir-etl/weir/connector"
)

// readAllCSV frames data with the source's lineReader (reads of bufSize
// bytes, the end of data ending the last record, as in mode once) and splits
// each record with splitCSV, skipping blank lines, as the source does.
func readAllCSV(data []byte, delim byte, bufSize int) ([][]string, error) {
	lr := lineReader{src: bytes.NewReader(data), bufSize: bufSize, maxLine: len(data) + 1, csv: true, delim: delim, final: true}
	var out [][]string
	for {
		raw, start, _, st, err := lr.next()
		if err != nil {
			return out, err
		}
		if st == lineNone {
			return out, nil
		}
		if start == 0 {
			raw = bytes.TrimPrefix(raw, bom)
		}
		if len(trimCR(raw)) == 0 {
			continue
		}
		fields, err := splitCSV(nil, raw, delim)
		if err != nil {
			return out, err
		}
		out = append(out, fields)
	}
}

// goCSV reads data with encoding/csv, configured as RFC 4180 (no lazy
// quotes, any number of fields), after dropping a byte order mark. Its one
// documented difference from the source is that it turns "\r\n" inside a
// quoted field into "\n"; the source keeps the bytes, so the comparison
// normalises the source's side.
func goCSV(data []byte, delim byte) ([][]string, error) {
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, bom)))
	r.Comma = rune(delim)
	r.FieldsPerRecord = -1
	var out [][]string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}

func normalise(recs [][]string) [][]string {
	out := make([][]string, len(recs))
	for i, r := range recs {
		out[i] = make([]string, len(r))
		for j, f := range r {
			out[i][j] = strings.ReplaceAll(f, "\r\n", "\n")
		}
	}
	return out
}

// genCSV writes a random RFC 4180 file: fields with delimiters, quotes, line
// breaks (LF and CRLF), CRs, non-ASCII text and empty fields, quoted when
// they must be and sometimes when they need not; LF or CRLF record ends; a
// byte order mark sometimes; a last record with or without its line end.
func genCSV(rng *rand.Rand, delim byte) ([]byte, [][]string) {
	pieces := []string{"a", "bc", "é", "日本", " ", string(delim), "\"", "\n", "\r\n", "\r", "x\"y", "0123456789"}
	nf := 1 + rng.IntN(5)
	var b bytes.Buffer
	if rng.IntN(4) == 0 {
		b.Write(bom)
	}
	eol := "\n"
	if rng.IntN(2) == 0 {
		eol = "\r\n"
	}
	var want [][]string
	nr := rng.IntN(30)
	for r := range nr {
		rec := make([]string, nf)
		for f := range rec {
			var v strings.Builder
			for range rng.IntN(4) {
				v.WriteString(pieces[rng.IntN(len(pieces))])
			}
			rec[f] = v.String()
			if f > 0 {
				b.WriteByte(delim)
			}
			s := rec[f]
			needs := strings.ContainsAny(s, string(delim)+"\"\r\n") || (nf == 1 && s == "")
			if needs || rng.IntN(5) == 0 {
				b.WriteString("\"" + strings.ReplaceAll(s, "\"", "\"\"") + "\"")
			} else {
				b.WriteString(s)
			}
		}
		if r < nr-1 || rng.IntN(2) == 0 {
			b.WriteString(eol)
		}
		want = append(want, rec)
	}
	return b.Bytes(), want
}

// The source reads RFC 4180 as encoding/csv does, on random files read
// through buffers of random sizes (so that records straddle reads), for
// each delimiter.
func TestCSVMatchesEncodingCSV(t *testing.T) {
	rng := rand.New(rand.NewPCG(4180, 1))
	for trial := range 2000 {
		delim := []byte{',', ';', '\t', '|'}[trial%4]
		data, want := genCSV(rng, delim)
		got, err := readAllCSV(data, delim, 64+rng.IntN(200))
		if err != nil {
			t.Fatalf("trial %d: %v\n%q", trial, err, data)
		}
		gold, err := goCSV(data, delim)
		if err != nil {
			t.Fatalf("trial %d: encoding/csv: %v\n%q", trial, err, data)
		}
		if !slices.EqualFunc(normalise(got), gold, slices.Equal) {
			t.Fatalf("trial %d: read %q\nencoding/csv %q\nfrom %q", trial, got, gold, data)
		}
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("trial %d: read %q\nwritten %q\nfrom %q", trial, got, want, data)
		}
	}
}

// FuzzCSV: on any input, where encoding/csv reads every record the source
// reads the same ones (up to its "\r\n" in quoted fields), and where it
// finds an error the source does too: no input is read differently without
// a word. The seeds run with go test.
func FuzzCSV(f *testing.F) {
	for _, s := range []string{
		"a,b\nc,d\n", "a,b\r\nc,d", "\"a\nb\",c\n", "\"a\"\"b\",\"\"\n", "\xEF\xBB\xBF\"h\",x\n1,2\n",
		"a,\"b\n", "a\"b,c\n", "\"a\"b,c\n", "\n\n\r\na\n", "\"\r\n\",x\r\n", ",,\n,\n", "\"a\"\r", "a,b\r",
	} {
		f.Add([]byte(s), byte(','), 64)
	}
	f.Add([]byte("a;\"b;c\"\n"), byte(';'), 70)
	f.Fuzz(func(t *testing.T, data []byte, delim byte, bufSize int) {
		if delim == '"' || delim == '\n' || delim == '\r' || delim >= 0x80 || delim == 0 {
			return
		}
		bufSize = 64 + (bufSize&0xFFFF)%512
		got, err := readAllCSV(data, delim, bufSize)
		gold, goErr := goCSV(data, delim)
		if goErr != nil {
			if err == nil {
				t.Fatalf("encoding/csv: %v; the source read %q without an error\nfrom %q", goErr, got, data)
			}
			return
		}
		if err != nil {
			t.Fatalf("the source: %v; encoding/csv read %q\nfrom %q", err, gold, data)
		}
		if !slices.EqualFunc(normalise(got), gold, slices.Equal) {
			t.Fatalf("read %q\nencoding/csv %q\nfrom %q", got, gold, data)
		}
	})
}

// csvRun reads dir's a.csv once with the given options and returns the
// records' fields in the header's order.
func csvRun(t *testing.T, data string, mutate func(*Config)) ([][]string, *harness) {
	t.Helper()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.csv"), data)
	h := open(t, testConfig(dir, func(c *Config) {
		c.Format, c.Paths = "csv", []string{filepath.Join(dir, "*.csv")}
		if mutate != nil {
			mutate(c)
		}
	}))
	var out [][]string
	for {
		b, err := h.poll()
		if errors.Is(err, connector.ErrEndOfInput) {
			return out, h
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range b.Records {
			m, err := r.Fields()
			if err != nil {
				t.Fatal(err)
			}
			f := h.src.files[b.Partition]
			row := make([]string, len(f.header))
			for i, n := range f.header {
				row[i] = m[n].(string)
			}
			out = append(out, row)
		}
	}
}

// The source's CSV, end to end: a byte order mark, CRLF, a quoted field
// across lines (its line break kept as it is in the file), doubled quotes,
// empty fields, and the last record without a line end.
func TestCSVRecords(t *testing.T) {
	got, _ := csvRun(t, "\xEF\xBB\xBFid;note;x\r\n1;\"two\r\nlines; \"\"quoted\"\"\";\r\n\r\n2;\"\";\"\"\"\"\r\n3;plain;last", func(c *Config) { c.CSVDelimiter = ";" })
	want := [][]string{{"1", "two\r\nlines; \"quoted\"", ""}, {"2", "", "\""}, {"3", "plain", "last"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("read %q\nwant %q", got, want)
	}
}

// A quoted record still open at the end of a growing file is neither emitted
// nor committed: the position stays before it until its closing quote and
// line end arrive.
func TestCSVPartialQuotedRecordWaits(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.csv")
	write(t, p, "id,note\n1,one\n2,\"multi\nline")
	h := open(t, testConfig(dir, func(c *Config) {
		c.Format, c.Mode, c.Paths = "csv", "tail", []string{filepath.Join(dir, "*.csv")}
	}))
	b, err := h.poll()
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Records) != 1 || b.End != 14 {
		t.Fatalf("first batch: %d records ending at %d; want 1 ending at 14, before the open record", len(b.Records), b.End)
	}
	for range 3 {
		if got, err := h.src.readSome(&connector.Batch{}); got || err != nil {
			t.Fatalf("read more (%v, %v) while the quoted field is open", got, err)
		}
	}
	appendTo(t, p, " end\"\n")
	b, err = h.poll()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := b.Records[0].Fields()
	if len(b.Records) != 1 || m["note"] != "multi\nline end" || b.End != 33 {
		t.Fatalf("second batch: %d records %v ending at %d; want the whole record, ending at 33", len(b.Records), m, b.End)
	}
}

// Header handling: none (csv_columns name the fields), the header's names
// replaced by csv_columns, a header record spanning lines read again after
// a restart, and headers that cannot name the fields.
func TestCSVHeaders(t *testing.T) {
	got, _ := csvRun(t, "1,a\n2,b\n", func(c *Config) { c.CSVHeader, c.CSVColumns = false, []string{"id", "name"} })
	if !slices.EqualFunc(got, [][]string{{"1", "a"}, {"2", "b"}}, slices.Equal) {
		t.Fatalf("without a header: %q", got)
	}
	_, h := csvRun(t, "ID,Name\n1,a\n", func(c *Config) { c.CSVColumns = []string{"id", "name"} })
	if f := h.src.files[1]; !slices.Equal(f.header, []string{"id", "name"}) {
		t.Fatalf("header %q, want csv_columns' names", f.header)
	}

	dir := t.TempDir()
	p := filepath.Join(dir, "a.csv")
	write(t, p, "\"first\nname\",last\nann,lee\n")
	cfg := testConfig(dir, func(c *Config) { c.Format, c.Paths = "csv", []string{p} })
	h = open(t, cfg)
	h.drain()
	h.commitAll()
	h.close()
	appendTo(t, p, "bo,ng\n")
	h = open(t, cfg)
	h.drain()
	if got := join(h.only()); got != `{"first\nname":"bo","last":"ng"}` {
		t.Fatalf("after a restart read %s", got)
	}

	for name, data := range map[string]string{"twice": "a,a\n1,2\n", "columns": "a,b,c\n1,2,3\n"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "a.csv"), data)
			h := open(t, testConfig(dir, func(c *Config) {
				c.Format, c.Paths, c.OnInvalid = "csv", []string{filepath.Join(dir, "*.csv")}, "skip"
				if name == "columns" {
					c.CSVColumns = []string{"x", "y"}
				}
			}))
			_, err := h.poll()
			var le *LineError
			if !errors.As(err, &le) || le.Offset != 0 {
				t.Fatalf("poll: %v, want a LineError at the header even with on_invalid: skip", err)
			}
		})
	}
}

// A CSV record longer than max_line_bytes may span lines; with on_invalid:
// skip it is dropped whole, its quoted line breaks included.
func TestCSVLongRecordSkippedWhole(t *testing.T) {
	long := "\"" + strings.Repeat("x\n", 50) + "\""
	got, h := csvRun(t, "a,b\n1,"+long+"\n2,ok\n", func(c *Config) {
		c.OnInvalid, c.MaxLineBytes, c.ReadBufferBytes = "skip", 40, 64
	})
	if !slices.EqualFunc(got, [][]string{{"2", "ok"}}, slices.Equal) || h.host.skipped[reasonTooLong] != 1 {
		t.Fatalf("read %q, skipped %v; want the long record dropped whole and counted", got, h.host.skipped)
	}
}

// Guarantee: a CSV record becomes a JSON object whose members are in the
// order of the header's columns (not sorted by name), each value the
// field's bytes as a JSON string, nothing replaced.
func TestCSVRecordKeepsColumnOrder(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.csv"), "zeta,alpha,mid\n1,\"a,\"\"b\"\"\",caf\xc3\xa9\n")
	h := open(t, testConfig(dir, func(c *Config) {
		c.Format, c.Paths = "csv", []string{filepath.Join(dir, "*.csv")}
	}))
	b, err := h.poll()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"zeta":"1","alpha":"a,\"b\"","mid":"café"}`
	if len(b.Records) != 1 || string(b.Records[0].Bytes()) != want {
		t.Fatalf("records %d, first %q; want %q", len(b.Records), b.Records[0].Bytes(), want)
	}
}
