package reference

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/internal/configtest"
)

// Markers a YAML block in the docs may carry on its first line.
const (
	// fragmentMarker marks a block that is part of a pipeline file on
	// purpose (a few keys to show one setting): it is checked as YAML only.
	fragmentMarker = "# weir: fragment"
	// testFileMarker marks a block that is a test file (weir test): it is
	// checked as one.
	testFileMarker = "# weir: test file"
)

// docsEnv are the variables the docs' examples use; a block that uses
// another one fails, naming it.
var docsEnv = map[string]string{
	"KAFKA_BROKERS":   "127.0.0.1:9092",
	"KAFKA_PASSWORD":  "secret-pw",
	"ORDERS_PASSWORD": "secret-pw",
	"OUT_DIR":         "/var/out",
	// password_env of the PostgreSQL examples: a variable an option names
	// must be set for the file to load (config's checkEnv).
	"SHOP_DB_PASSWORD": "secret-pw",
	"PGPASSWORD":       "secret-pw",
	"POD_NAME":         "weir-0", // the Helm chart sets it (docs/deploy.md)
}

// block is a fenced YAML block of a Markdown file.
type block struct {
	file string
	line int // of its first line of YAML
	text string
}

// yamlBlocks returns the ```yaml blocks of the Markdown in data.
func yamlBlocks(file string, data []byte) []block {
	var out []block
	var cur *block
	var body strings.Builder
	for i, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && (trimmed == "```yaml" || trimmed == "```yml"):
			cur = &block{file: file, line: i + 2}
			body.Reset()
		case cur != nil && trimmed == "```":
			cur.text = body.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(line + "\n")
		}
	}
	return out
}

// checkBlock validates one block and returns its problems, each naming the
// block's file and line. A block that shows only sources (or only sinks) of
// a pipeline is completed with a stand-in for the other side, so that its
// connectors' options are checked as in a whole file.
func checkBlock(b block) []string {
	where := fmt.Sprintf("%s:%d", b.file, b.line)
	first, _, _ := strings.Cut(strings.TrimSpace(b.text), "\n")
	// Blank lines in front make the problems' line numbers the Markdown
	// file's own.
	padded := []byte(strings.Repeat("\n", b.line-1) + b.text)
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(b.text), &doc); err != nil {
		return []string{fmt.Sprintf("%s: not valid YAML: %v", where, err)}
	}
	switch strings.TrimSpace(first) {
	case fragmentMarker:
		return nil
	case testFileMarker:
		var out []string
		if _, errs := configtest.Parse(b.file, padded); len(errs) > 0 {
			for _, e := range errs {
				out = append(out, e.Error())
			}
		}
		return out
	}
	var sets []config.Set
	if len(doc.Content) > 0 && doc.Content[0].Kind == yaml.MappingNode {
		sets = complete(doc.Content[0])
	}
	_, err := config.ParseWith(b.file, padded, config.Options{Offline: true, Sets: sets, Lookup: func(name string) (string, bool) {
		v, ok := docsEnv[name]
		return v, ok
	}})
	if err == nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(err.Error(), "\n")[1:] { // below the summary
		// A certificate an example names need not exist where the docs
		// are checked (the PostgreSQL sink looks for its files when it
		// validates).
		if missingFile.MatchString(line) {
			continue
		}
		out = append(out, strings.TrimSpace(line))
	}
	return out
}

var missingFile = regexp.MustCompile(`\.(ca|cert|key)_file: \S+ cannot be read: no such file or directory$`)

// complete returns the edits that give a pipeline file showing only its
// sources a sink (a blackhole fed by every source and transform), and one
// showing only sinks or transforms the sources they name (generate).
func complete(root *yaml.Node) []config.Set {
	section := func(name string) *yaml.Node {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == name {
				return root.Content[i+1]
			}
		}
		return nil
	}
	names := func(n *yaml.Node) []string {
		var out []string
		if n != nil && n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				out = append(out, n.Content[i].Value)
			}
		}
		return out
	}
	sources, transforms, sinks := section("sources"), section("transforms"), section("sinks")
	var sets []config.Set
	if sinks == nil && sources != nil {
		var inputs []string
		inputs = append(inputs, names(sources)...)
		for i := 0; transforms != nil && i+1 < len(transforms.Content); i += 2 {
			name, t := transforms.Content[i].Value, transforms.Content[i+1]
			if outs := section2(t, "outputs"); outs != nil {
				for _, o := range names(outs) {
					inputs = append(inputs, name+"."+o)
				}
			} else {
				inputs = append(inputs, name)
			}
		}
		sets = append(sets, config.Set{Flag: "(a stand-in sink)", Path: "sinks.weir_docs_sink", Value: "{type: blackhole, inputs: [" + strings.Join(inputs, ", ") + "]}"})
	}
	if sources == nil && (sinks != nil || transforms != nil) {
		defined := append(names(transforms), names(sinks)...)
		var missing []string
		for _, sec := range []*yaml.Node{transforms, sinks} {
			for i := 0; sec != nil && i+1 < len(sec.Content); i += 2 {
				for _, in := range stringsOf(section2(sec.Content[i+1], "inputs")) {
					base, _, _ := strings.Cut(in, ".")
					if !slices.Contains(defined, base) && !slices.Contains(missing, base) {
						missing = append(missing, base)
					}
				}
			}
		}
		for _, m := range missing {
			sets = append(sets, config.Set{Flag: "(a stand-in source)", Path: "sources." + m, Value: "{type: generate, count: 1}"})
		}
	}
	return sets
}

// section2 returns the value of key in mapping n, or nil.
func section2(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func stringsOf(n *yaml.Node) []string {
	var out []string
	if n != nil && n.Kind == yaml.SequenceNode {
		for _, c := range n.Content {
			out = append(out, c.Value)
		}
	}
	return out
}

// docFiles are the Markdown files whose YAML blocks are checked.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join("..", "..", "README.md")}, files...)
}

// Every YAML block of README.md and docs/*.md is what it says it is: a
// pipeline file (or its sources or sinks) that loads with the connectors
// weir ships, a test file, or, marked "# weir: fragment", valid YAML. An
// example that does not load is an error in the docs.
func TestDocsYAMLBlocks(t *testing.T) {
	n := 0
	for _, f := range docFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(filepath.Join("..", ".."), f)
		for _, b := range yamlBlocks(rel, data) {
			n++
			for _, p := range checkBlock(b) {
				t.Errorf("%s", p)
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d YAML blocks found in the docs", n)
	}
}

// The check of the docs' blocks finds a broken block: the smallest
// pipeline as docs/config.md once had it, with path and dir for paths and
// path, and an option given the wrong type; and it takes the markers.
func TestDocsBlockCheckFindsBreakage(t *testing.T) {
	md := []byte("text\n\n```yaml\n" +
		"sources:\n  in: { type: file, path: /data/in.jsonl }\nsinks:\n  out: { type: file, inputs: [in], dir: /data/out }\n" +
		"```\n\n```yaml\n" +
		"sources:\n  in: { type: file, paths: [/data/in.jsonl], data_dir: /s, batch_size: lots }\n" +
		"```\n\n```yaml\n" + fragmentMarker + "\nbatch: { max_age: 2s }\n" +
		"```\n\n```yaml\n" + testFileMarker + "\ntests:\n  - name: x\n    outputs: { out: [] }\n" +
		"```\n\n```yaml\n" + testFileMarker + "\ntests:\n  - name: x\n" +
		"```\n")
	blocks := yamlBlocks("x.md", md)
	if len(blocks) != 5 || blocks[0].line != 4 {
		t.Fatalf("%d blocks, the first at line %d", len(blocks), blocks[0].line)
	}
	want := [][]string{
		{`x.md:5: sources.in: unknown option "path" (did you mean "paths"?)`, `x.md:7: sinks.out: unknown option "dir"`},
		{`x.md:12: sources.in.batch_size: "lots" is not a whole number`},
		nil,
		nil,
		{`x.md:30: test "x" checks nothing`},
	}
	for i, b := range blocks {
		got := strings.Join(checkBlock(b), "\n")
		if len(want[i]) == 0 && got != "" {
			t.Errorf("block %d: %s", i, got)
		}
		for _, w := range want[i] {
			if !strings.Contains(got, w) {
				t.Errorf("block %d: %q lacks %q", i, got, w)
			}
		}
	}
}
