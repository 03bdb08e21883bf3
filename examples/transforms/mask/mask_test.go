package mask_test

import (
	"strings"
	"testing"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/transform"

	_ "github.com/weir-etl/weir/examples/transforms/mask"
	_ "github.com/weir-etl/weir/sink/blackhole"
	_ "github.com/weir-etl/weir/source/generate"
)

// load loads a pipeline whose transform is the given mask options.
func load(t *testing.T, opts string) (transform.Transform, error) {
	t.Helper()
	spec, err := config.Parse("p.yaml", []byte(`sources:
  in: {type: generate, count: 1}
transforms:
  m:
    type: mask
    inputs: [in]
`+opts+`
sinks:
  out: {type: blackhole, inputs: [m]}
`))
	if err != nil {
		return nil, err
	}
	return spec.Transforms[0].Transform, nil
}

func TestMaskFromAPipelineFile(t *testing.T) {
	m, err := load(t, "    fields: [card, phone, absent]\n    keep: 2")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ in, want string }{
		{`{"card":"4111111111111111","phone":"0612","id":12345678901234567891}`, `{"card":"**************11","phone":"**12","id":12345678901234567891}`},
		{`{"card":"é1","phone":null}`, `{"card":"é1","phone":null}`}, // short enough: left alone
		{`{"card":"ñañañ"}`, `{"card":"***añ"}`},                     // characters, not bytes
	}
	for _, c := range cases {
		r := record.New([]byte(c.in))
		out, err := m.Process(&r, nil)
		if err != nil || len(out) != 1 || string(out[0].Bytes()) != c.want {
			t.Errorf("%s: got %v %v, want %s", c.in, out, err, c.want)
			continue
		}
	}
	r := record.New([]byte(`{"card":4111}`))
	if _, err := m.Process(&r, nil); err == nil || !strings.Contains(err.Error(), "not a string") {
		t.Errorf("a number masked: %v", err)
	}
}

// The registry makes the loader check the options as it does a connector's:
// each problem at its option.
func TestMaskOptionsAreChecked(t *testing.T) {
	cases := []struct{ opts, want string }{
		{"    keep: 2", "p.yaml:4: transforms.m.fields: missing"},
		{"    fields: [a]\n    keep: -1", "p.yaml:8: transforms.m.keep: must be 0 or more"},
		{"    fields: [a]\n    with: ab", "p.yaml:8: transforms.m.with: must be one character"},
		{"    fields: [a]\n    keeep: 1", `p.yaml:8: transforms.m: unknown option "keeep" (did you mean "keep"?)`},
	}
	for _, c := range cases {
		_, err := load(t, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v\nwant %q", c.opts, err, c.want)
		}
	}
	if _, ok := transform.Lookup("mask"); !ok {
		t.Fatal("mask is not registered")
	}
}
