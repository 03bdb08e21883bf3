package reference

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-etl/weir/lang"
)

var expressionsMD = filepath.Join("..", "..", "docs", "expressions.md")

// The function reference of docs/expressions.md is what FunctionsMarkdown
// generates from lang's table: a new function, a changed doc or example,
// fails this test until `go test ./internal/reference -update` writes it.
func TestFunctionReferenceIsUpToDate(t *testing.T) {
	data, err := os.ReadFile(expressionsMD)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	begin, end := strings.Index(doc, FunctionsBegin), strings.Index(doc, FunctionsEnd)
	if begin < 0 || end < begin {
		t.Fatalf("%s has no generated reference between %q and %q", expressionsMD, FunctionsBegin, FunctionsEnd)
	}
	have := doc[begin+len(FunctionsBegin) : end]
	want := "\n\n" + FunctionsMarkdown() + "\n"
	if have == want {
		return
	}
	if *update {
		if err := os.WriteFile(expressionsMD, []byte(doc[:begin+len(FunctionsBegin)]+want+doc[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the function reference in %s", expressionsMD)
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
			t.Fatalf("the function reference in docs/expressions.md is out of date (run go test ./internal/reference -update); first difference, line %d of it:\n have %q\n want %q", i+1, h, w)
		}
	}
}

// Every function has a doc, a category, an example and its output, and
// help knows it by name and lists it.
func TestEveryFunctionIsDescribed(t *testing.T) {
	var list bytes.Buffer
	HelpFunctions(&list)
	for _, f := range lang.Functions() {
		if f.Doc == "" || f.Example == "" || f.Output == "" {
			t.Errorf("%s lacks a doc, an example or its output", f.Name)
		}
		var b bytes.Buffer
		if !Help(&b, f.Name) || !strings.Contains(b.String(), f.Signature()) {
			t.Errorf("weir help %s does not show its signature:\n%s", f.Name, b.String())
		}
		if !strings.Contains(list.String(), "  "+f.Name+" ") {
			t.Errorf("weir help functions does not list %s", f.Name)
		}
	}
}

// The schema offers the functions as completions of every expression
// option.
func TestSchemaCompletesFunctions(t *testing.T) {
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Definitions map[string]struct {
			Properties map[string]struct {
				DefaultSnippets []struct{ Label, Body string } `json:"defaultSnippets"`
			} `json:"properties"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	cond := s.Definitions["transform.filter"].Properties["condition"].DefaultSnippets
	if len(cond) != len(lang.Functions()) {
		t.Fatalf("filter's condition has %d completions, want one per function (%d)", len(cond), len(lang.Functions()))
	}
	found := false
	for _, c := range cond {
		found = found || c.Label == "sha256" && c.Body == "sha256(${1:s})"
	}
	if !found {
		t.Errorf("no sha256(${1:s}) completion in %v", cond[:3])
	}
}
