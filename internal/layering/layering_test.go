// Package layering holds the test that keeps weir's packages in their
// layers: which package may import which (rules, below), and which may start
// goroutines (goroutines, below). docs/layout.md says the same in prose.
package layering

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/weir-etl/weir"

// A rule constrains the packages matching pkgs (paths inside the module;
// "x/..." is x and everything under it). Only, when set, is the whole list
// of weir packages they may import directly; never lists weir packages they
// may not reach at all, directly or through others. Test files are not
// held to the rules: a connector's tests may run it in a pipeline.
type rule struct {
	pkgs  string
	only  []string
	avoid []string
	never []string
	why   string
}

var rules = []rule{
	{pkgs: "checkpoint/...", only: []string{"internal/acksync"},
		why: "the checkpoint is the core: it knows no record, connector or runtime (internal/acksync holds its atomics, which the model checker swaps)"},
	{pkgs: "internal/acksync", only: []string{"internal/modelcheck"},
		why: "the checkpoint's atomics, and the model checker's under its tag"},
	{pkgs: "record", only: []string{"checkpoint", "internal/recordack"},
		why: "a record knows its acknowledgement and nothing of the runtime (internal/recordack is the runtime's one way to the unexported reference)"},
	{pkgs: "internal/recordack", only: []string{"checkpoint"},
		why: "the accessor of a record's reference knows the reference's type and nothing else"},
	{pkgs: "pipeline/view", never: []string{"pipeline", "config", "source/...", "sink/...", "internal/cli"},
		why: "the read model and its renderings: data in, text and JSON out, no runtime inside"},
	{pkgs: "internal/fleet", never: []string{"source/...", "sink/...", "internal/cli"},
		why: "the manager of many pipelines runs Specs the loader built; it knows no connector type"},
	{pkgs: "connector", only: []string{"checkpoint", "record"},
		why: "the connector contract: what a source or a sink sees of weir"},
	{pkgs: "connector/conformance/...", only: []string{"checkpoint", "connector", "record", "connector/conformance/..."},
		why: "the suites check the contract alone; the runtime reaches them through conformance.Runtime (pipeline/pipelinetest)"},
	{pkgs: "lang", only: []string{"record", "internal/suggest", "internal/cacheline"},
		why: "expressions work on records alone"},
	{pkgs: "transform/...", never: []string{"pipeline/...", "config", "connector/...", "source/...", "sink/..."},
		why: "a transform changes records; acknowledgements and the runtime are not its business"},
	{pkgs: "transform/...", only: []string{"lang", "record", "transform/...", "internal/cacheline"},
		why: "a transform sees records and expressions, not their acknowledgements (checkpoint)"},
	{pkgs: "examples/transforms/...", only: []string{"lang", "record", "transform"},
		why: "a transform of one's own needs the transform package and records, nothing of the runtime"},
	{pkgs: "source/...", avoid: []string{"checkpoint/...", "internal/acksync"},
		why: "a source names partitions and positions as the connector contract does (connector.Partition, connector.Position), not by the core's own types"},
	{pkgs: "sink/...", avoid: []string{"checkpoint/...", "internal/acksync"},
		why: "a sink names partitions and positions as the connector contract does (connector.Partition, connector.Position), not by the core's own types"},
	{pkgs: "source/...", never: []string{"config", "pipeline/...", "internal/cli", "sink/..."},
		why: "a source implements the connector contract; the loader and the runtime find it through the registry"},
	{pkgs: "sink/...", never: []string{"config", "pipeline/...", "internal/cli", "source/..."},
		why: "a sink implements the connector contract, and shares code with a source through internal/, not through it"},
	{pkgs: "examples/connectors/jsonlsink", only: []string{"connector", "record"},
		why: "the worked example of a sink shows that the contract is enough"},
	{pkgs: "examples/connectors/linesource", only: []string{"connector", "record"},
		why: "the worked example of a source shows that the contract is enough"},
	{pkgs: "pipeline", never: []string{"config", "source/...", "sink/...", "internal/cli", "internal/builtin"},
		why: "the runtime runs a Spec; it knows no file and no connector type"},
	{pkgs: "config", never: []string{"source/...", "sink/...", "internal/cli", "internal/builtin"},
		why: "the loader learns connector and transform types from their registries"},
}

// goroutines lists the packages whose non-test files may contain a go
// statement, each with why; everything else does its work on its caller's
// goroutines (the runtime's). A package not listed fails the test at the
// file and line of its go statement.
var goroutines = map[string]string{
	"pipeline":                   "the runtime: a goroutine per source, partition, transform worker and sink",
	"internal/cli":               "the command runs the pipeline beside its file watcher and its signal handling",
	"internal/fleet":             "each pipeline of a directory runs on a goroutine of its own, beside the API's server",
	"internal/modelcheck":        "the model checker runs each explored thread on a goroutine of its own, scheduled one at a time",
	"internal/testkit/kafkatest": "a kit: its proxy serves connections and its host polls as the runtime would",
	"connector/conformance":      "the suites call Poll and Persist on goroutines of their own to catch one that blocks",
	"internal/testkit/weirtest":  "a kit: it waits on the weir process it started, so that a test can watch it exit",
	"sink/kafka":                 "the transactional producer's acknowledgement pump, one per group in flight",
	"sink/postgres":              "a sealed group's COPY, begun at Seal on a connection of its own while the group before it commits",
	"sink/s3":                    "a multipart upload sends its parts while the group is written",
	"source/http":                "the HTTP server that receives records",
	"source/kafka":               "the client's fetch loop, which polls the broker while the runtime takes batches",
	"source/pgcdc":               "the replication stream, read and confirmed while the runtime takes batches",
	"source/s3":                  "the listing and download of objects ahead of Poll",
	"bench/...":                  "benchmark programs drive load from several goroutines",
}

type pkg struct {
	ImportPath     string
	Dir            string
	Imports        []string
	GoFiles        []string
	CgoFiles       []string
	IgnoredGoFiles []string // other platforms and build tags: the broken variants are checked too
}

// list returns the module's packages, by path inside the module ("" is the
// root).
func list(t *testing.T) map[string]*pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json", module+"/...")
	cmd.Dir = root(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		p := new(pkg)
		if err := dec.Decode(p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[rel(p.ImportPath)] = p
		watch(t, p.Dir)
	}
	if len(pkgs) < 20 || pkgs["checkpoint"] == nil || pkgs["pipeline"] == nil {
		t.Fatalf("go list found %d packages, without checkpoint or pipeline: the walk is broken", len(pkgs))
	}
	return pkgs
}

var moduleRoot = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return "", fmt.Errorf("finding the module (go env GOMOD): %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
})

// watch reads the directory and stats its Go files, so that go test's cache
// (which sees what the test opens, not what go list read) runs the test
// again when a file is added or changed.
func watch(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".go") {
			if _, err := os.Stat(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func root(t *testing.T) string {
	t.Helper()
	dir, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// rel is path inside the module, or "" for a package outside it.
func rel(path string) string {
	if path == module {
		return "."
	}
	if r, ok := strings.CutPrefix(path, module+"/"); ok {
		return r
	}
	return ""
}

func match(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

func matchAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, path) })
}

// weirImports returns the module's packages p imports directly.
func weirImports(p *pkg) []string {
	var out []string
	for _, imp := range p.Imports {
		if r := rel(imp); r != "" {
			out = append(out, r)
		}
	}
	return out
}

// chain returns the shortest import chain from p to a package matching one
// of never, or nil.
func chain(pkgs map[string]*pkg, from string, never []string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur != from && matchAny(never, cur) {
			var path []string
			for p := cur; p != ""; p = prev[p] {
				path = append([]string{p}, path...)
			}
			return path
		}
		if pkgs[cur] == nil {
			continue
		}
		for _, imp := range weirImports(pkgs[cur]) {
			if _, seen := prev[imp]; !seen {
				prev[imp] = cur
				queue = append(queue, imp)
			}
		}
	}
	return nil
}

// violations returns one line per broken rule.
func violations(pkgs map[string]*pkg, rules []rule) []string {
	var out []string
	names := make([]string, 0, len(pkgs))
	for name := range pkgs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, r := range rules {
		matched := false
		for _, name := range names {
			if !match(r.pkgs, name) {
				continue
			}
			matched = true
			if r.only != nil {
				for _, imp := range weirImports(pkgs[name]) {
					if !matchAny(r.only, imp) {
						out = append(out, fmt.Sprintf("%s imports %s: %s may import only %s (%s)", name, imp, r.pkgs, strings.Join(r.only, ", "), r.why))
					}
				}
			}
			for _, imp := range weirImports(pkgs[name]) {
				if matchAny(r.avoid, imp) {
					out = append(out, fmt.Sprintf("%s imports %s: %s may not import %s directly (%s)", name, imp, r.pkgs, strings.Join(r.avoid, ", "), r.why))
				}
			}
			if r.never != nil {
				if c := chain(pkgs, name, r.never); c != nil {
					out = append(out, fmt.Sprintf("%s imports %s: %s must not reach %s (%s)", name, strings.Join(c[1:], " -> "), r.pkgs, strings.Join(r.never, ", "), r.why))
				}
			}
		}
		if !matched {
			out = append(out, fmt.Sprintf("rule for %s matches no package: fix the table", r.pkgs))
		}
	}
	return out
}

// goStatements returns file:line of each go statement in p's non-test
// files (those of every platform and build tag).
func goStatements(t *testing.T, p *pkg) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	files := slices.Concat(p.GoFiles, p.CgoFiles, p.IgnoredGoFiles)
	slices.Sort(files)
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || !strings.HasSuffix(name, ".go") {
			continue
		}
		path := filepath.Join(p.Dir, name)
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("parsing %s: %v", path, err)
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				pos := fset.Position(g.Pos())
				r, _ := filepath.Rel(root(t), pos.Filename)
				out = append(out, fmt.Sprintf("%s:%d", r, pos.Line))
			}
			return true
		})
	}
	return out
}

func TestImportsKeepTheLayers(t *testing.T) {
	for _, v := range violations(list(t), rules) {
		t.Error(v)
	}
}

func TestOnlyListedPackagesStartGoroutines(t *testing.T) {
	pkgs := list(t)
	allowed := func(name string) bool {
		for p := range goroutines {
			if match(p, name) {
				return true
			}
		}
		return false
	}
	found := map[string]bool{}
	for name, p := range pkgs {
		for _, at := range goStatements(t, p) {
			found[name] = true
			if !allowed(name) {
				t.Errorf("%s: a go statement in %s, which may not start goroutines: run the work on the caller's goroutine, or add %s to the goroutines table in internal/layering with why", at, name, name)
			}
		}
	}
	for p, why := range goroutines {
		if why == "" {
			t.Errorf("goroutines table: %s has no reason", p)
		}
		if !strings.HasSuffix(p, "/...") && !found[p] {
			t.Errorf("goroutines table: %s starts no goroutine: remove it", p)
		}
	}
}
