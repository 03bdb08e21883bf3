// Package licenses finds the licence of every module weir is built from,
// classifies it, and decides whether weir may depend on it. Its test
// (TestDependencyLicences) runs the decision over the real module graph in
// every `go test ./...`, so a dependency under a licence weir cannot carry
// fails CI the day it is added.
//
// # The policy
//
// weir is Apache-2.0 and ships as static binaries and a container image, so
// every dependency's code is in what users receive. Which modules count:
// every module that provides a package to the weir binary ("shipped"), or
// to any test under any of the tree's build tags ("test-only"; not in a
// release, but a contributor builds it). A module that is only named in
// the module graph and compiled into nothing is not looked at.
//
//   - Permissive licences (the list in permissive: Apache-2.0, MIT, BSD,
//     ISC, 0BSD, CC0, ...) are allowed. Their notices
//     travel with every release archive (THIRD_PARTY_LICENSES, written by
//     the test with -third-party), and the NOTICE file of an Apache-2.0
//     module (its section 4(d)) is carried in weir's NOTICE: the test fails
//     when a module with a NOTICE is not named there.
//   - Strong copyleft (GPL, AGPL, SSPL, EUPL, OSL and the like) is refused,
//     shipped or test-only.
//   - Weak copyleft (LGPL, MPL, EPL, CDDL): LGPL is refused, since a static Go binary
//     cannot be relinked by its user as the LGPL asks. MPL-2.0 is file-level
//     copyleft that an unmodified dependency satisfies by its source being
//     public; it is allowed only for a module listed in reviewedWeakCopyleft
//     with the reason, after a person read it: today pgregory.net/rapid,
//     which only the property tests use.
//   - Every other licence (non-commercial, source-available, WTFPL, one
//     licensecheck does not know) is refused until a person reads it and
//     adds it to a list here, and so is a module with no licence file: no
//     licence means no right to redistribute. A file that licensecheck
//     recognises for less than minCoverage of its words is unrecognised.
package licenses

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/google/licensecheck"
)

// Module is one module weir is built from, with its licence files.
type Module struct {
	Path, Version, Dir string
	// Shipped: a package of it is linked into the weir binary.
	Shipped bool
	// Licences are its licence files, NoticeFiles its NOTICE files.
	Licences    []File
	NoticeFiles []string
}

// File is one licence file of a module and what licensecheck found in it.
type File struct {
	Name    string // relative to the module's directory
	Text    []byte
	IDs     []string // SPDX-style identifiers, in the order found
	Percent float64  // of the file's words that matched
}

// minCoverage is the share of a licence file's words that must match known
// licences for the file to count as recognised: below it, something in the
// file (an extra clause, a changed word) needs a person to read it.
const minCoverage = 75

// reviewedWeakCopyleft lists the MPL-2.0 modules a person read and allowed,
// by module path, with the reason.
var reviewedWeakCopyleft = map[string]string{
	"pgregory.net/rapid": "MPL-2.0; the property tests' generator, test-only: never linked into weir, used unmodified",
	// MPL-2.0 is file-level copyleft: a binary may carry MPL files
	// unmodified as long as their source stays available, which it is, at
	// the module path and version THIRD_PARTY_LICENSES names.
	"github.com/go-sql-driver/mysql":     "MPL-2.0; linked through iceberg-go's SQL catalog (bun's MySQL dialect), which weir's Iceberg sink does not use; unmodified",
	"github.com/hashicorp/golang-lru/v2": "MPL-2.0; an LRU cache that iceberg-go and modernc.org/libc link; unmodified",
}

// reviewedFiles lists the licence files, by module path and file name,
// that licensecheck does not recognise and a person read, with what they
// hold: the policy then judges the module by its other files and the
// licences the file names.
var reviewedFiles = map[string]string{
	"modernc.org/libc LICENSE-3RD-PARTY.md":   "notices of third-party code (Go's BSD-3-Clause, musl's MIT) under headings of its own: all permissive",
	"modernc.org/memory LICENSE-LOGO":         "where the project's logo image comes from: no licence of code",
	"modernc.org/sqlite LICENSE-SQLITE":       "SQLite's dedication of its code to the public domain",
	"modernc.org/sqlite LICENSE-3RD-PARTY.md": "a table of the module's dependencies and their licences (BSD, MIT, Apache-2.0, golang-lru's MPL-2.0) with their texts",
}

// Tags are the build tags the tree uses whose files may import more
// modules: the tests under every one of them count.
var Tags = "integration,e2e,modelcheck,browser"

// List returns the modules the module in root is built from (its weir
// binary, ./cmd/weir, and its tests under Tags), sorted by path, with their
// licence and notice files read from the module cache. It runs the go
// command, which must have the modules downloaded or be able to.
func List(ctx context.Context, root string) ([]Module, error) {
	const format = `{{with .Module}}{{if not .Main}}{{.Path}}	{{.Version}}	{{if .Replace}}{{.Replace.Dir}}{{else}}{{.Dir}}{{end}}{{end}}{{end}}`
	all, err := goList(ctx, root, "list", "-deps", "-test", "-tags", Tags, "-f", format, "./...")
	if err != nil {
		return nil, err
	}
	shipped, err := goList(ctx, root, "list", "-deps", "-f", format, "./cmd/weir")
	if err != nil {
		return nil, err
	}
	var mods []Module
	for key, m := range all {
		_, m.Shipped = shipped[key]
		if m.Dir == "" {
			return nil, fmt.Errorf("licenses: module %s %s is not in the module cache (go mod download %s)", m.Path, m.Version, m.Path)
		}
		if err := m.read(); err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Path < mods[j].Path })
	return mods, nil
}

func goList(ctx context.Context, root string, args ...string) (map[string]Module, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("licenses: go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	mods := map[string]Module{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 3 {
			continue // a package of the main module or of the standard library
		}
		mods[f[0]+"@"+f[1]] = Module{Path: f[0], Version: f[1], Dir: f[2]}
	}
	return mods, sc.Err()
}

var (
	licenceName = regexp.MustCompile(`(?i)^(licen[cs]e|copying|unlicense)([-._][a-z0-9.-]*)?$`)
	noticeName  = regexp.MustCompile(`(?i)^notice([-._].*)?$`)
)

// read finds the licence and notice files at the root of the module's
// directory and classifies each licence.
func (m *Module) read() error {
	entries, err := os.ReadDir(m.Dir)
	if err != nil {
		return fmt.Errorf("licenses: module %s: %w", m.Path, err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		switch name := e.Name(); {
		case licenceName.MatchString(name) && !strings.HasSuffix(name, ".go"):
			text, err := os.ReadFile(filepath.Join(m.Dir, name))
			if err != nil {
				return fmt.Errorf("licenses: module %s: %w", m.Path, err)
			}
			m.Licences = append(m.Licences, Classify(name, text))
		case noticeName.MatchString(name):
			m.NoticeFiles = append(m.NoticeFiles, name)
		}
	}
	return nil
}

// Classify scans one licence file's text.
func Classify(name string, text []byte) File {
	cov := licensecheck.Scan(text)
	f := File{Name: name, Text: text, Percent: cov.Percent}
	for _, match := range cov.Match {
		if !contains(f.IDs, match.ID) {
			f.IDs = append(f.IDs, match.ID)
		}
	}
	return f
}

// permissive are the licences weir may depend on without asking anyone:
// their only condition is that their notice travels with the software.
var permissive = map[string]bool{
	"Apache-2.0": true, "MIT": true, "MIT-0": true, "ISC": true, "0BSD": true, "Zlib": true,
	"BSD-2-Clause": true, "BSD-2-Clause-FreeBSD": true, "BSD-3-Clause": true, "BSD-3-Clause-Clear": true,
	"BSL-1.0": true, "CC0-1.0": true, "Unlicense": true, "PostgreSQL": true, "X11": true, "NCSA": true,
}

// Copyleft families, by the start of their identifiers.
var (
	strongCopyleft = []string{"GPL-", "AGPL-", "SSPL", "EUPL-", "OSL-", "RPL-", "CPAL-", "Sleepycat", "CC-BY-SA-", "Parity-", "QPL-"}
	weakCopyleft   = []string{"LGPL-", "MPL-", "EPL-", "CDDL-", "CPL-", "MS-RL", "APSL-", "ErlPL-"}
)

func family(id string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Licence is the module's licence in a few words: the identifiers found in
// its licence files.
func (m Module) Licence() string {
	var ids []string
	for _, f := range m.Licences {
		for _, id := range f.IDs {
			if !contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return "none found"
	}
	return strings.Join(ids, " AND ")
}

// Problem says why the policy refuses a module, or is empty when it allows
// it.
func (m Module) Problem() string {
	if len(m.Licences) == 0 {
		return "no licence file (LICENSE, COPYING, ...) at the module's root: no right to redistribute it"
	}
	for _, f := range m.Licences {
		if _, ok := reviewedFiles[m.Path+" "+f.Name]; ok {
			continue
		}
		if f.Percent < minCoverage || len(f.IDs) == 0 {
			return fmt.Sprintf("%s: licence not recognised (%.0f%% of its words matched %s): a person must read it", f.Name, f.Percent, strings.Join(f.IDs, ", "))
		}
		for _, id := range f.IDs {
			switch {
			case permissive[id]:
			case family(id, strongCopyleft):
				return fmt.Sprintf("%s: %s is strong copyleft: refused", f.Name, id)
			case strings.HasPrefix(id, "MPL-"):
				if _, ok := reviewedWeakCopyleft[m.Path]; !ok {
					return fmt.Sprintf("%s: %s is weak copyleft: allowed only once reviewed (internal/licenses: reviewedWeakCopyleft, with the reason)", f.Name, id)
				}
			case family(id, weakCopyleft):
				return fmt.Sprintf("%s: %s is weak copyleft that a static binary cannot honour: refused", f.Name, id)
			default:
				return fmt.Sprintf("%s: %s is not among the permissive licences weir takes (internal/licenses): a person must read it", f.Name, id)
			}
		}
	}
	return ""
}

// Table writes one line per module: path, version, shipped or test-only,
// licence, and what the policy says.
func Table(mods []Module) string {
	var b strings.Builder
	for _, m := range mods {
		use := "test-only"
		if m.Shipped {
			use = "shipped"
		}
		verdict := "ok"
		if p := m.Problem(); p != "" {
			verdict = "REFUSED: " + p
		}
		fmt.Fprintf(&b, "%-60s %-36s %-9s %-28s %s\n", m.Path, m.Version, use, m.Licence(), verdict)
	}
	return b.String()
}

// ThirdParty is the text that goes with a release: the licence of Go's
// standard library and runtime (goLicence, from GOROOT), then the licence
// files of every shipped module, each under its module's name. BSD- and
// MIT-style licences ask that their notice be reproduced with a binary.
func ThirdParty(mods []Module, goLicence []byte) []byte {
	var b bytes.Buffer
	b.WriteString("The weir binary is built with Go and from the following modules, under these licences.\n")
	fmt.Fprintf(&b, "\n%s\n== Go's standard library and runtime (BSD-3-Clause, GOROOT/LICENSE)\n%s\n\n", strings.Repeat("=", 78), strings.Repeat("=", 78))
	b.Write(bytes.TrimSpace(goLicence))
	b.WriteString("\n")
	for _, m := range mods {
		if !m.Shipped {
			continue
		}
		for _, f := range m.Licences {
			fmt.Fprintf(&b, "\n%s\n== %s %s (%s, %s)\n%s\n\n", strings.Repeat("=", 78), m.Path, m.Version, m.Licence(), f.Name, strings.Repeat("=", 78))
			b.Write(bytes.TrimSpace(f.Text))
			b.WriteString("\n")
		}
	}
	return b.Bytes()
}
