package configtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/weir-etl/weir/sink/blackhole"
	_ "github.com/weir-etl/weir/source/generate"
)

const pipelineYAML = `
sources:
  in: { type: generate, count: 1 }
  more: { type: generate, count: 1 }
transforms:
  paid: { type: filter, inputs: [in], condition: 'status == "paid"' }
  total: { type: map, inputs: [paid], set: { total: 'qty * price' } }
  split: { type: route, inputs: [total, more], outputs: { big: 'total > 100', small: 'total <= 100' } }
sinks:
  big: { type: blackhole, inputs: [split.big] }
  small: { type: blackhole, inputs: [split.small] }
`

// write writes the pipeline and a test file beside it, and loads the test
// file.
func write(t *testing.T, tests string) *File {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(pipelineYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	tf := filepath.Join(dir, "p_test.yaml")
	if err := os.WriteFile(tf, []byte(tests), 0o600); err != nil {
		t.Fatal(err)
	}
	f, errs := Load(tf, "")
	if len(errs) > 0 {
		t.Fatalf("load: %v", errs)
	}
	return f
}

func runAll(t *testing.T, f *File) []*Result {
	t.Helper()
	var out []*Result
	for i := range f.Tests {
		out = append(out, f.Run(context.Background(), &f.Tests[i]))
	}
	return out
}

// Guarantee: a test passes when every output is what it says (exact, by
// count, by conditions), and each way of being wrong is a failure that says
// what: a diff of the records (- wanted, + got), the count, the record that
// breaks a condition, an error the run should have had.
func TestRun(t *testing.T) {
	f := write(t, `
tests:
  - name: passes
    inputs:
      in:
        - '{"status":"paid","qty":2,"price":30.5}'
        - '{"status":"open","qty":1,"price":5}'
        - value: {status: paid, qty: 10, price: 20}
          key: k1
    outputs:
      paid: { count: 2, each: ['status == "paid"'] }
      total:
        - '{"status":"paid","qty":2,"price":30.5,"total":61}'
        - value: {qty: 10, price: 20, status: paid, total: 200}
          key: k1
      split.small: ['{"status":"paid","qty":2,"price":30.5,"total":61}']
      big: {records: [{value: {status: paid, qty: 10, price: 20, total: 200}}]}
  - name: wrong records
    inputs:
      in: ['{"status":"paid","qty":2,"price":3}']
    outputs:
      total: ['{"status":"paid","qty":2,"price":3,"total":7}', '{"extra":1}']
  - name: wrong count and condition
    inputs:
      in: ['{"status":"paid","qty":2,"price":3}']
    outputs:
      small: { count: 2, each: ['total > 10'] }
  - name: a byte-exact record is compared byte for byte
    inputs:
      in: ['{"status":"paid","qty":2,"price":3}']
    outputs:
      total: ['{"status": "paid","qty":2,"price":3,"total":6}']
  - name: an error that does not come
    inputs:
      in: ['{"status":"paid","qty":1,"price":1}']
    error: rejected
    outputs:
      small: { count: 1 }
  - name: an error that comes
    inputs:
      in: ['{"status":"paid","qty":"x","price":1}']
    error: total rejected a record
    outputs:
      small: { count: 0 }
  - name: two sources, no order
    inputs:
      in: ['{"status":"paid","qty":1,"price":1}']
      more: ['{"total":2}', '{"total":1000}']
    outputs:
      small: ['{"total":2}', '{"status":"paid","qty":1,"price":1,"total":1}']
`)
	res := runAll(t, f)
	want := []struct {
		pass  bool
		texts []string
	}{
		{true, nil},
		{false, []string{"outputs.total (line 22): the records differ (- want, + got):",
			`  - {"status":"paid","qty":2,"price":3,"total":7}`, `  - {"extra":1}`, `  + {"status":"paid","qty":2,"price":3,"total":6}`}},
		{false, []string{"outputs.small (line 27): 1 record, want 2", `record 1 is not "total > 10"`}},
		{false, []string{`  - {"status": "paid","qty":2,"price":3,"total":6}`, `  + {"status":"paid","qty":2,"price":3,"total":6}`}},
		{false, []string{`the run: ended without an error; want one with "rejected"`}},
		{true, nil},
		{true, nil},
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.Case.Name, r.Err)
		}
		var text strings.Builder
		for _, fl := range r.Failures {
			text.WriteString(fl.What + ": " + fl.Msg + "\n" + fl.Diff)
		}
		if r.Passed() != want[i].pass {
			t.Errorf("%s: passed %v, want %v\n%s", r.Case.Name, r.Passed(), want[i].pass, text.String())
		}
		for _, w := range want[i].texts {
			if !strings.Contains(text.String(), w) {
				t.Errorf("%s: the failure lacks %q:\n%s", r.Case.Name, w, text.String())
			}
		}
	}
}

// Problems of a test file are all reported at once, each at its line; a
// test that names what the pipeline does not have cannot run, and says
// what there is.
func TestFileProblems(t *testing.T) {
	_, errs := Parse("t.yaml", []byte(`
tests:
  - name: a
    inputs: { in: [{key: k}] }
    outputs: { x: {count: many} }
  - name: a
    outputs: { x: 3 }
  - nme: b
    inputs: { in: [{value: 1, time: yesterday}] }
`))
	var all []string
	for _, e := range errs {
		all = append(all, e.Error())
	}
	got := strings.Join(all, "\n")
	for _, w := range []string{
		"t.yaml:4: inputs.in: the record has no value",
		"t.yaml:5: outputs.x.count must be a number of records",
		`t.yaml:6: test "a" is named twice (first on line 3)`,
		"t.yaml:7: outputs.x: give the records (a list), or a mapping of records, count and each",
		`t.yaml:8: a test: unknown key "nme" (did you mean "name"?)`,
		"t.yaml:9: inputs.in.time: \"yesterday\" is not an RFC 3339 time",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("problems lack %q:\n%s", w, got)
		}
	}
	f := write(t, `
tests:
  - name: names
    inputs: { nope: ['{}'] }
    outputs: { split: [], nothing: [] }
`)
	r := f.Run(context.Background(), &f.Tests[0])
	for _, w := range []string{`inputs.nope: the configuration has no source "nope" (its sources: in, more)`,
		`outputs.split: "split" is no transform, route output or sink`, "split.big, split.small"} {
		if r.Err == nil || !strings.Contains(r.Err.Error(), w) {
			t.Errorf("got %v, want %q", r.Err, w)
		}
	}
}

// JSON written as YAML is compared as JSON: members in any order, numbers
// by value (exactly: 0.1 + 0.2 is not 0.3).
func TestJSONEqual(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		eq   bool
	}{
		{`{"a":1,"b":[1,2]}`, `{"b":[1,2],"a":1.0}`, true},
		{`{"a":79.8}`, `{"a":79.80}`, true},
		{`{"a":79.8}`, `{"a":79.80000000000001}`, false},
		{`{"a":12345678901234567891}`, `{"a":12345678901234567890}`, false},
		{`[1,2]`, `[2,1]`, false},
		{`{"a":null}`, `{}`, false},
		{`not json`, `not json`, false},
	} {
		if got := jsonEqual([]byte(tc.a), []byte(tc.b)); got != tc.eq {
			t.Errorf("jsonEqual(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}
