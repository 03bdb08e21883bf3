package config

import (
	"strings"
	"testing"
	"time"
)

const setsBase = `sources:
  in: { type: test_source, path: /a, topics: [t1, t2] }
sinks:
  out: { type: test_sink, inputs: [in] }
`

// A --set edits the file's tree before decoding: its value is typed as
// YAML would type it in the file, creates what is missing, and a problem
// with it names the flag, not a line.
func TestSets(t *testing.T) {
	sets := func(args ...string) []Set {
		var out []Set
		for _, a := range args {
			s, err := ParseSet("--set", a)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	lookup := env(map[string]string{"P": "/from-env"})
	spec, err := ParseWith("p.yaml", []byte(setsBase), Options{Lookup: lookup, Sets: sets(
		"sinks.out.batch.max_age=2s",
		"sources.in.topics[1]=changed",
		"sources.in.topics[2]=added",
		"sources.in.path=${P}",
		"sources.in.tls.verify=true",
		"checkpoint.commit_interval=250ms",
		"metrics.address=off",
	)})
	if err != nil {
		t.Fatal(err)
	}
	c := spec.Sources[0].Source.(*testSource).cfg
	if got := strings.Join(c.Topics, ","); got != "t1,changed,added" || c.Path != "/from-env" || !c.TLS.Verify {
		t.Errorf("source config %+v", c)
	}
	if spec.Sinks[0].Batch.MaxAge != 2*time.Second || spec.Checkpoint.CommitInterval != 250*time.Millisecond || spec.Metrics.Address != "off" {
		t.Errorf("spec: max_age %v, commit_interval %v, metrics %q", spec.Sinks[0].Batch.MaxAge, spec.Checkpoint.CommitInterval, spec.Metrics.Address)
	}
	// A whole pipeline from sets alone, on an empty file.
	if _, err := ParseWith("empty.yaml", nil, Options{Sets: sets(
		"sources.in={type: test_source, path: /a}", "sinks.out={type: test_sink, inputs: [in]}")}); err != nil {
		t.Errorf("a pipeline from sets: %v", err)
	}

	for _, tc := range []struct {
		arg, want string
	}{
		{"sinks.out.batch.max_age=5", `--set sinks.out.batch.max_age=5: sinks.out.batch.max_age: "5" has no unit`},
		{"sinks.out.colour=red", `--set sinks.out.colour=red: sinks.out: unknown option "colour"`},
		{"sources.in.type.x=1", `--set sources.in.type.x=1: sources.in.type: sources.in.type is a scalar, not a mapping`},
		{"sources.in.topics[5]=x", `--set sources.in.topics[5]=x: sources.in.topics[5]: the list has 2 items: use an index up to 2`},
		{"sources.in.path.x[0]=y", `sources.in.path is a scalar, not a mapping`},
		{"sources.in.path=[unclosed", `--set sources.in.path=[unclosed: sources.in.path: the value is not valid YAML`},
		{"sources.in.port=${NOPE}", `--set sources.in.port=${NOPE}: sources.in.port: environment variable NOPE is not set`},
		{"sinks.out.inputs=[nowhere]", `--set sinks.out.inputs=[nowhere]: sinks.out.inputs[0]: "nowhere" names no source`},
	} {
		_, err := ParseWith("p.yaml", []byte(setsBase), Options{Lookup: lookup, Sets: sets(tc.arg)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %s: got %v\nwant %q", tc.arg, err, tc.want)
		}
	}
	for _, bad := range []string{"novalue", "=x", "a..b=1", "a[x]=1", "a[0]b=1"} {
		if _, err := ParseSet("--set", bad); err == nil || !strings.HasPrefix(err.Error(), "config: --set") {
			t.Errorf("ParseSet(%q) = %v, want an error naming the flag", bad, err)
		}
	}
}
