package config

import (
	"errors"
	"strings"
	"testing"
)

// TestSyntaxErrorsAtTheirLine pins where a YAML syntax error is reported:
// at the line and column of the fault, not at the line where the enclosing
// block began (the parser's own line, 1 for most faults of a pipeline file).
func TestSyntaxErrorsAtTheirLine(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		want       string
	}{
		{"bad indent", "sources:\n  in:\n    type: file\n    paths: [a]\n   mode: once\nsinks:\n  out: x\n",
			"p.yaml:5:4: not valid YAML: did not find expected key: check the indentation"},
		{"bad indent in a list", "a:\n  - 1\n  - 2\n - 3\n",
			"p.yaml:4:2: not valid YAML: did not find expected key"},
		{"tab", "a: 1\nb: 2\n\tc: 3\n",
			"p.yaml:3:1: not valid YAML: found a tab character that violates indentation: indent with spaces"},
		{"unclosed flow mapping", "sources:\n  in: { type: file, paths: [a] \n  x: 1\n",
			"p.yaml:2:3: not valid YAML: did not find expected ',' or '}'"},
		{"unclosed flow sequence", "sources:\n  in:\n    type: file\n    paths: [a\nsinks:\n  out: x\n",
			"p.yaml:4:5: not valid YAML: did not find expected ',' or ']'"},
		{"unclosed quote: where it began", "a: 'unclosed\nb: 2\n",
			"not valid YAML: found unexpected end of stream"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parse("p.yaml", []byte(c.yaml), env(nil))
			var es *Errors
			if !errors.As(err, &es) || len(es.List) != 1 {
				t.Fatalf("err %v, want one *Error", err)
			}
			if got := es.List[0].Error(); !strings.Contains(got, c.want) {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestOneFaultOneMessage holds configurations with one mistake each, which
// used to be reported together with what the mistake made fail next: each
// must now give exactly the one message listed.
func TestOneFaultOneMessage(t *testing.T) {
	const head = "sources:\n  in: { type: test_source, path: /x }\n"
	for _, c := range []struct {
		name, yaml string
		vars       map[string]string
		want       []string
	}{
		{"typo in an option name: not also that option missing",
			"sources:\n  in: { type: test_source, pahh: /x }\nsinks:\n  out: { type: test_sink, inputs: [in] }\n", nil,
			[]string{`p.yaml:2: sources.in: unknown option "pahh" (did you mean "path"?)`}},
		{"unset variable: not also its empty value invalid",
			"sources:\n  in: { type: test_source, path: /x, port: \"${PORT_UNSET}\" }\nsinks:\n  out: { type: test_sink, inputs: [in] }\n", nil,
			[]string{`p.yaml:2: sources.in.port: environment variable PORT_UNSET is not set`}},
		{"a route named without its output: not also its outputs feeding nothing",
			head + "transforms:\n  r: { type: route, inputs: [in], outputs: { a: 'true' } }\nsinks:\n  out: { type: test_sink, inputs: [r] }\n", nil,
			[]string{`p.yaml:6: sinks.out.inputs[0]: "r" is a route: name one of its outputs (r.a)`}},
		{"a source named with an output: not also feeding nothing",
			head + "sinks:\n  out: { type: test_sink, inputs: [in.put] }\n", nil,
			[]string{`p.yaml:4: sinks.out.inputs[0]: "in" is not a route, so "in.put" names nothing; write "in"`}},
		{"the wrong name for a required option: one message suggesting it",
			head + "sinks:\n  out: { type: test_sink, from: [in] }\n", nil,
			[]string{`p.yaml:4: sinks.out: unknown option "from" (did you mean "inputs"? the sink is fed by nothing`}},
		{"a route's outputs under a wrong key: one message, not also its readers",
			head + "transforms:\n  r: { type: route, inputs: [in], routes: { a: 'true' } }\nsinks:\n  out: { type: test_sink, inputs: [r.a] }\n", nil,
			[]string{`p.yaml:4: transforms.r: unknown option "routes"; valid options: inputs, outputs, type`}},
		{"an unknown type far from every type: no suggestion",
			"sources:\n  in: { type: nope }\nsinks:\n  out: { type: test_sink, inputs: [in] }\n", nil,
			[]string{`p.yaml:2: sources.in.type: unknown source type "nope"; registered source types:`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parse("p.yaml", []byte(c.yaml), env(c.vars))
			var es *Errors
			if !errors.As(err, &es) {
				t.Fatalf("err %v, want *Errors", err)
			}
			if len(es.List) != len(c.want) {
				t.Fatalf("%d problems, want %d:\n%v", len(es.List), len(c.want), err)
			}
			for i, w := range c.want {
				if got := es.List[i].Error(); !strings.HasPrefix(got, w) {
					t.Errorf("problem %d:\ngot  %s\nwant %s...", i, got, w)
				}
			}
		})
	}
}
