package licenses

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

var thirdParty = flag.String("third-party", "", "write the licences of the shipped modules to `FILE` (a release's THIRD_PARTY_LICENSES)")

func moduleRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Guarantee: every module weir or its tests are built from has a licence
// the policy (the package doc) allows, every module with a NOTICE file is
// named in weir's NOTICE, and weir's own LICENSE is the Apache License 2.0.
// With -v it prints the table; with -third-party FILE it writes the
// licences that go with a release.
func TestDependencyLicences(t *testing.T) {
	root := moduleRoot(t)
	mods, err := List(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the modules weir is built from (%d):\n%s", len(mods), Table(mods))
	notice, err := os.ReadFile(filepath.Join(root, "NOTICE"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range mods {
		seen[m.Path] = m.Shipped
		if p := m.Problem(); p != "" {
			t.Errorf("%s %s: %s", m.Path, m.Version, p)
		}
		if !m.Shipped {
			continue // not in what weir distributes
		}
		for _, name := range m.NoticeFiles {
			text, err := os.ReadFile(filepath.Join(m.Dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(words(notice), words(append([]byte(m.Path+" "), text...))) {
				t.Errorf("%s has a %s whose attribution weir's NOTICE must carry (Apache-2.0, section 4(d)): add the module's path and its notice to NOTICE", m.Path, name)
			}
		}
	}
	// The listing must see what weir is known to be built from: a module
	// that is linked in, and one that only the tests use.
	if !seen["github.com/twmb/franz-go"] || seen["github.com/google/licensecheck"] {
		t.Errorf("franz-go shipped %v, licensecheck shipped %v: want franz-go in the binary and licensecheck test-only; the listing is wrong", seen["github.com/twmb/franz-go"], seen["github.com/google/licensecheck"])
	}
	own, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if f := Classify("LICENSE", own); len(f.IDs) != 1 || f.IDs[0] != "Apache-2.0" || f.Percent < 99 {
		t.Errorf("weir's LICENSE: %v at %.1f%%; want the full text of Apache-2.0 alone", f.IDs, f.Percent)
	}
	if *thirdParty != "" {
		goroot, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			t.Fatal(err)
		}
		goLicence, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(goroot)), "LICENSE"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(*thirdParty, ThirdParty(mods, goLicence), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// words is text with every run of white space made one space, so that a
// notice matches however it is wrapped or indented.
func words(text []byte) string { return strings.Join(strings.Fields(string(text)), " ") }

// licenceText returns the text of one of licensecheck's own test licences
// (testdata/NAME: two header lines, a blank line, the text): real licence
// texts, as a module would carry them.
func licenceText(t *testing.T, name string) []byte {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/google/licensecheck").Output()
	if err != nil {
		t.Fatalf("finding licensecheck's module: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := bytes.Cut(data, []byte("\n\n"))
	if !ok {
		t.Fatalf("%s: no blank line after its header", name)
	}
	return text
}

// Guarantee: the policy allows permissive licences and refuses strong
// copyleft, LGPL, an MPL module nobody reviewed, an unrecognised text and
// a module without a licence, each with a reason that says which.
func TestPolicy(t *testing.T) {
	for _, tc := range []struct {
		file, path string
		want       string // "" for allowed, else a word of the reason
	}{
		{"Apache-2.0.t1", "example.com/apache", ""},
		{"MIT.t1", "example.com/mit", ""},
		{"BSD-3-Clause.t1", "example.com/bsd", ""},
		{"0BSD.t1", "example.com/0bsd", ""},
		{"GPL-2.0.t1", "example.com/gpl", "strong copyleft"},
		{"GPL-3.0.t1", "example.com/gpl3", "strong copyleft"},
		{"AGPL-3.0.t1", "example.com/agpl", "strong copyleft"},
		{"LGPL-2.1.t1", "example.com/lgpl", "static binary cannot honour"},
		{"LGPL-3.0.t1", "example.com/lgpl3", "static binary cannot honour"},
		{"MPL-2.0.t1", "example.com/mpl", "allowed only once reviewed"},
	} {
		m := Module{Path: tc.path, Licences: []File{Classify("LICENSE", licenceText(t, tc.file))}}
		got := m.Problem()
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s (%s): Problem() = %q, want %q", tc.file, m.Licence(), got, tc.want)
		}
	}

	reviewedWeakCopyleft["example.com/mpl"] = "read and allowed, for this test"
	defer delete(reviewedWeakCopyleft, "example.com/mpl")
	if p := (Module{Path: "example.com/mpl", Licences: []File{Classify("LICENSE", licenceText(t, "MPL-2.0.t1"))}}).Problem(); p != "" {
		t.Errorf("a reviewed MPL-2.0 module: %q, want it allowed", p)
	}
	if p := (Module{Path: "example.com/other", Licences: []File{Classify("LICENSE", licenceText(t, "MPL-2.0.t1"))}}).Problem(); p == "" {
		t.Error("an MPL-2.0 module that was not reviewed is allowed because another one was")
	}

	// An Apache licence with a clause added is no longer the Apache licence.
	changed := append(licenceText(t, "Apache-2.0.t1"), []byte(strings.Repeat("You may not use this software to run a stream processor. ", 300))...)
	if p := (Module{Path: "example.com/changed", Licences: []File{Classify("LICENSE", changed)}}).Problem(); !strings.Contains(p, "not recognised") {
		t.Errorf("a licence with much added: %q, want it not recognised", p)
	}
	if p := (Module{Path: "example.com/none"}).Problem(); !strings.Contains(p, "no licence file") {
		t.Errorf("a module without a licence: %q, want it refused", p)
	}
}
