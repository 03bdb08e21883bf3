package builtin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/connector"
)

// Every connector weir ships with is registered in a normal build; in one
// with -tags noiceberg (leanBuild) the iceberg sink alone is missing, and a
// configuration naming it is told the build left it out and how to get it,
// not that the type is unknown.
func TestBuildHasItsConnectors(t *testing.T) {
	sources := strings.Join(connector.SourceTypes(), " ")
	if want := "file generate http_server kafka postgres_cdc s3"; sources != want {
		t.Errorf("source types %q, want %q", sources, want)
	}
	sinks := strings.Join(connector.SinkTypes(), " ")
	want := "blackhole file http iceberg kafka postgres s3 stdout"
	if leanBuild {
		want = "blackhole file http kafka postgres s3 stdout"
	}
	if sinks != want {
		t.Errorf("sink types %q, want %q", sinks, want)
	}
	_, left := connector.LeftOut("sink", "iceberg")
	if left != leanBuild {
		t.Errorf("iceberg left out: %v, want %v", left, leanBuild)
	}
}

func TestLeftOutTypeIsNamed(t *testing.T) {
	if !leanBuild {
		t.Skip("a normal build leaves nothing out; go test -tags noiceberg runs this")
	}
	p := filepath.Join(t.TempDir(), "weir.yaml")
	os.WriteFile(p, []byte("sources:\n  g: { type: generate, count: 1 }\nsinks:\n  t:\n    type: iceberg\n    inputs: [g]\n"), 0o644)
	_, err := config.Load(p)
	if err == nil {
		t.Fatal("a config naming the left-out iceberg sink loaded")
	}
	msg := err.Error()
	for _, want := range []string{"weir.yaml:5", "sinks.t.type", `"iceberg" is left out of this build`, "-tags noiceberg"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "did you mean") || strings.Contains(msg, "unknown") {
		t.Errorf("error %q treats the left-out type as a typo", msg)
	}
}
