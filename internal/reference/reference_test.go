package reference

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-etl/weir/config"
)

var update = flag.Bool("update", false, "rewrite the reference part of docs/config.md from the configuration structs")

var configMD = filepath.Join("..", "..", "docs", "config.md")

// The reference part of docs/config.md is what Markdown generates from the
// configuration structs: a new option, a changed doc or default, fails this
// test until `go test ./internal/reference -update` writes it.
func TestReferenceIsUpToDate(t *testing.T) {
	data, err := os.ReadFile(configMD)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	begin := strings.Index(doc, BeginMarker)
	end := strings.Index(doc, EndMarker)
	if begin < 0 || end < begin {
		t.Fatalf("%s has no generated reference between %q and %q", configMD, BeginMarker, EndMarker)
	}
	have := doc[begin+len(BeginMarker) : end]
	want := "\n\n" + Markdown() + "\n"
	if have == want {
		return
	}
	if *update {
		doc = doc[:begin+len(BeginMarker)] + want + doc[end:]
		if err := os.WriteFile(configMD, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the reference in %s", configMD)
		return
	}
	hl, wl := strings.Split(have, "\n"), strings.Split(want, "\n")
	for i := range max(len(hl), len(wl)) {
		var h, w string
		if i < len(hl) {
			h = hl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if h != w {
			t.Fatalf("the reference in docs/config.md is out of date (run go test ./internal/reference -update); first difference, line %d of it:\n have %q\n want %q", i+1, h, w)
		}
	}
}

// Every option of every type, and every key of the file, has a doc: help,
// the schema and the reference show it.
func TestEveryOptionIsDocumented(t *testing.T) {
	for _, ty := range Types() {
		if ty.Doc == "" {
			t.Errorf("%s %s has no doc", ty.Kind, ty.Name)
		}
		for _, f := range flatten("", ty.Options) {
			if strings.TrimSpace(f.opt.Doc) == "" {
				t.Errorf("%s %s: option %s has no doc tag", ty.Kind, ty.Name, f.path)
			}
		}
	}
	for _, s := range Sections() {
		for _, f := range flatten("", s.Options) {
			if strings.TrimSpace(f.opt.Doc) == "" {
				t.Errorf("%s: key %s has no doc tag", s.Name, f.path)
			}
		}
	}
}

// The options that are numbers of bytes are sizes (they take 64MiB), and
// durations are durations: help and the schema say so, and the loader
// takes what they say.
func TestUnitsAreDescribed(t *testing.T) {
	for _, ty := range Types() {
		for _, f := range flatten("", ty.Options) {
			if strings.HasSuffix(f.opt.Name, "_bytes") && f.opt.Kind != config.KindSize {
				t.Errorf("%s %s: %s is %s, not a size", ty.Kind, ty.Name, f.path, f.opt.Kind)
			}
			if f.opt.Kind == config.KindSize && f.opt.Unit != "bytes" || f.opt.Kind == config.KindDuration && f.opt.Unit != "duration" {
				t.Errorf("%s %s: %s has unit %q", ty.Kind, ty.Name, f.path, f.opt.Unit)
			}
		}
	}
}

// decodeProblems are the words of the loader's problems with a value that
// does not decode (as opposed to Validate's, about what is missing).
var decodeProblems = []string{"unknown option", "is not a whole number", "is not a number", "is not true or false",
	"is not a duration", "has no unit", "is not a size", "must be a list", "must be a mapping", "must be a size", "must be a duration", "is not valid"}

// A type's skeleton (weir help TYPE) loads: every default it writes decodes
// as the option's type, so a pipeline started from it needs only the
// required options filled in.
func TestSkeletonsLoad(t *testing.T) {
	for _, ty := range Types() {
		if ty.Kind == Transform {
			continue
		}
		b := block{file: ty.Kind + "-" + ty.Name + ".yaml", line: 1, text: Skeleton(ty)}
		for _, p := range checkBlock(b) {
			for _, w := range decodeProblems {
				if strings.Contains(p, w) {
					t.Errorf("%s %s: the skeleton does not load: %s\n%s", ty.Kind, ty.Name, p, b.text)
				}
			}
		}
	}
}
