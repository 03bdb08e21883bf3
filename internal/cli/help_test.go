package cli

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/internal/reference"

	// Every type weir ships, as the command has them.
	_ "github.com/weir-etl/weir/internal/builtin"
)

// `weir help TYPE` works for every registered type and transform type: it
// names the type, lists every option (nested ones by their dotted path)
// with its type and doc, and ends with a skeleton; the file's own keys
// have their topics too.
func TestHelpForEveryType(t *testing.T) {
	types := reference.Types()
	if len(types) < 12 {
		t.Fatalf("only %d types", len(types))
	}
	for _, ty := range types {
		code, stdout, stderr := runCLI("help", ty.Name)
		if code != ExitOK || stderr != "" {
			t.Errorf("weir help %s: exit %d, stderr %q", ty.Name, code, stderr)
			continue
		}
		if !strings.Contains(stdout, ty.Kind+" "+ty.Name+": "+ty.Doc) || !strings.Contains(stdout, "Skeleton") {
			t.Errorf("weir help %s does not name the %s with its doc, or has no skeleton:\n%s", ty.Name, ty.Kind, stdout)
		}
		for _, path := range optionPaths("", ty.Options) {
			if !strings.Contains(stdout, "\n  "+path+"  (") {
				t.Errorf("weir help %s does not list option %s:\n%s", ty.Name, path, stdout)
			}
		}
	}
	for _, s := range reference.Sections() {
		code, stdout, _ := runCLI("help", s.Name)
		if code != ExitOK || !strings.Contains(stdout, s.Doc) {
			t.Errorf("weir help %s: exit %d\n%s", s.Name, code, stdout)
		}
		for _, path := range optionPaths("", s.Options) {
			if !strings.Contains(stdout, "\n  "+path+"  (") {
				t.Errorf("weir help %s does not list %s:\n%s", s.Name, path, stdout)
			}
		}
	}
	// A name that is a source and a sink type shows both.
	_, stdout, _ := runCLI("help", "file")
	if !strings.Contains(stdout, "source file: ") || !strings.Contains(stdout, "sink file: ") {
		t.Errorf("weir help file shows one of the two file types:\n%s", stdout)
	}
	for _, want := range []string{"max_line_bytes  (size, default 1MiB)", "poll_interval  (duration, default 250ms)",
		"template_time  (string, default processing; one of processing, record, field)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("weir help file lacks %q", want)
		}
	}
	code, stdout, _ := runCLI("list")
	if code != ExitOK || !strings.Contains(stdout, "Transform types:") || !strings.Contains(stdout, "  postgres_cdc") {
		t.Errorf("weir list: exit %d\n%s", code, stdout)
	}
}

// weir schema prints one JSON document: the schema of a pipeline file,
// with a definition for every type.
func TestSchemaCommand(t *testing.T) {
	code, stdout, stderr := runCLI("schema")
	if code != ExitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var s struct {
		Schema      string         `json:"$schema"`
		Definitions map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	for _, ty := range reference.Types() {
		if _, ok := s.Definitions[ty.Kind+"."+ty.Name]; !ok {
			t.Errorf("no definition of %s %s", ty.Kind, ty.Name)
		}
	}
	if !strings.Contains(s.Schema, "draft-07") {
		t.Errorf("$schema %q", s.Schema)
	}
}

// weir version says the version (stamped at build time, or the module's),
// the VCS revision and its time, and the Go version, from the build info.
func TestVersionText(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/weir-etl/weir", Version: "v0.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "3f2a9c1e0b7d"}, {Key: "vcs.time", Value: "2026-12-01T10:12:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	plat := runtime.GOOS + "/" + runtime.GOARCH
	for _, tc := range []struct {
		stamped string
		bi      *debug.BuildInfo
		want    string
	}{
		{"dev", bi, "weir v0.4.0\nrevision 3f2a9c1e0b7d (2026-12-01T10:12:00Z, modified)\ngo1.26.8 " + plat + "\n"},
		{"v0.4.1-rc1", bi, "weir v0.4.1-rc1\nrevision 3f2a9c1e0b7d (2026-12-01T10:12:00Z, modified)\ngo1.26.8 " + plat + "\n"},
		{"dev", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "weir (devel)\nrevision unknown (not built from a VCS checkout)\ngo1.26.8 " + plat + "\n"},
		{"dev", nil, "weir (devel)\nrevision unknown (not built from a VCS checkout)\n" + runtime.Version() + " " + plat + "\n"},
	} {
		if got := versionText(tc.stamped, tc.bi); got != tc.want {
			t.Errorf("versionText(%q):\n got %q\nwant %q", tc.stamped, got, tc.want)
		}
	}
}

// optionPaths lists the dotted paths of opts and their nested options, as
// help names them.
func optionPaths(prefix string, opts []config.Option) []string {
	var out []string
	for _, o := range opts {
		p := prefix + o.Name
		out = append(out, p)
		switch {
		case o.Kind == config.KindObject:
			out = append(out, optionPaths(p+".", o.Options)...)
		case o.Kind == config.KindList && o.Elem != nil && o.Elem.Kind == config.KindObject:
			out = append(out, optionPaths(p+"[].", o.Elem.Options)...)
		}
	}
	return out
}
