package recordack_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Only package record (which installs the accessor) and package pipeline
// (the runtime, which sets, clones and releases references) import this
// package: a transform or a connector holding a record's reference could
// release it, or copy it and release it twice.
func TestOnlyTheRuntimeImportsIt(t *testing.T) {
	root := filepath.Join("..", "..")
	allowed := []string{"record" + string(filepath.Separator), "pipeline" + string(filepath.Separator), filepath.Join("internal", "recordack") + string(filepath.Separator)}
	found := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), `"github.com/weir-etl/weir/internal/recordack"`) {
			return nil
		}
		found++
		rel, _ := filepath.Rel(root, path)
		for _, a := range allowed {
			if strings.HasPrefix(rel, a) && !strings.Contains(strings.TrimPrefix(rel, a), string(filepath.Separator)) {
				return nil
			}
		}
		t.Errorf("%s imports internal/recordack: only package record and package pipeline may", rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 2 {
		t.Fatalf("found %d importers of internal/recordack, want record and pipeline at least: is the walk looking at the module?", found)
	}
}
