package config

import (
	"errors"
	"fmt"
	"testing"

	_ "github.com/weir-etl/weir/source/generate"
)

// TestEveryOptionProblemInOnePass loads a file with five bad connector
// options, in two components, of three kinds: values a connector's Validate
// refuses (two in one component, as joined field errors), a value that does
// not decode, a list item and a nested option. One pass must report all five,
// each at the line of its own option.
func TestEveryOptionProblemInOnePass(t *testing.T) {
	_, err := load(t, "options.yaml", nil)
	var es *Errors
	if !errors.As(err, &es) {
		t.Fatalf("err %v, want *Errors", err)
	}
	want := []string{
		"options.yaml:4: sources.gen.count:",
		"options.yaml:5: sources.gen.batch_size:",
		"options.yaml:6: sources.gen.partitions:",
		"options.yaml:10: sources.in.topics[2]:",
		"options.yaml:12: sources.in.tls.ca_file:",
	}
	var got []string
	for _, e := range es.List {
		got = append(got, fmt.Sprintf("%s:%d: %s:", e.File, e.Line, e.Field))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("problems at\n%q\nwant\n%q\nall:\n%v", got, want, err)
	}
}

// TestValidateAfterBadValues checks what is reported when some options do
// not decode: the connector's Validate still runs, so its other problems come
// out in the same pass, but it sees the defaults of the bad options, so what
// it says about them, and about the component as a whole, is left out.
func TestValidateAfterBadValues(t *testing.T) {
	_, err := parse("p.yaml", []byte(`sources:
  in:
    type: test_source
    path: [not, a, path]
    password: reject-me
    tls: { ca_file: /bad }
sinks:
  out: { type: test_sink, inputs: [in] }
`), env(nil))
	var es *Errors
	if !errors.As(err, &es) {
		t.Fatalf("err %v, want *Errors", err)
	}
	want := []string{
		`p.yaml:4: sources.in.path: must be a string; got a list`,
		`p.yaml:6: sources.in.tls.ca_file: cannot be /bad`,
	}
	var got []string
	for _, e := range es.List {
		got = append(got, e.Error())
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}
