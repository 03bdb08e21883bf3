package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/weir-etl/weir/internal/reference"
)

const helpDoc = `Prints the usage; with a TOPIC, the options of a source, transform or
sink type (every option's type, default, unit and doc, and a skeleton to
start from), or the keys of the file itself: source, transform, sink,
checkpoint, metrics. "types" lists the types (as weir list does).`

func (c *command) help(args []string) int {
	fs := c.flagSet("help")
	if code, ok := c.parse(fs, args, "weir help [TOPIC]", helpDoc); !ok {
		return code
	}
	switch {
	case fs.NArg() == 0:
		fmt.Fprint(c.stdout, usage)
		fmt.Fprintln(c.stdout)
		listTypes(c.stdout)
	case fs.NArg() == 1 && fs.Arg(0) == "types":
		listTypes(c.stdout)
	case fs.NArg() == 1:
		if !reference.Help(c.stdout, fs.Arg(0)) {
			var names []string
			for _, t := range reference.Types() {
				names = append(names, t.Name)
			}
			return c.usageErr(fs.Name(), fmt.Sprintf("unknown help topic %q: there are the types (%s), %s, and \"types\"",
				fs.Arg(0), strings.Join(dedup(names), ", "), strings.Join(reference.Topics(), ", ")))
		}
	default:
		return c.usageErr(fs.Name(), fmt.Sprintf("one topic at a time, not %q", strings.Join(fs.Args(), " ")))
	}
	return ExitOK
}

func dedup(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// listTypes lists the types with their one-line docs.
func listTypes(w io.Writer) { reference.List(w) }

const schemaDoc = `Prints the JSON Schema of a pipeline file: every section, every source,
transform and sink type of this weir with its options, docs and defaults.
Save it and point your editor at it; for the YAML language server, put
this line at the top of a pipeline file:

  # yaml-language-server: $schema=./weir.schema.json`

func (c *command) schema(args []string) int {
	fs := c.flagSet("schema")
	if code, ok := c.parse(fs, args, "weir schema > weir.schema.json", schemaDoc); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return c.usageErr(fs.Name(), fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	b, err := reference.Schema()
	if err != nil {
		fmt.Fprintln(c.stderr, "weir:", err)
		return ExitRuntime
	}
	fmt.Fprintf(c.stdout, "%s\n", b)
	return ExitOK
}

func (c *command) version(args []string) int {
	fs := c.flagSet("version")
	if code, ok := c.parse(fs, args, "weir version", "Prints the version, the VCS revision and time it was built from, and the Go version."); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return c.usageErr(fs.Name(), fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	bi, _ := debug.ReadBuildInfo()
	fmt.Fprint(c.stdout, versionText(Version, bi))
	return ExitOK
}

// versionText is what weir version prints:
//
//	weir v0.4.0
//	revision 3f2a9c1e0b7d (2026-12-01T10:12:00Z, modified)
//	go1.26.8 linux/amd64
//
// The version is the one given at build time (-ldflags -X ...Version=), or
// else the module's (a go install of a tagged version), or "(devel)". The
// revision and its time are those go build stamps in a VCS checkout;
// "modified" says the tree had changes.
func versionText(stamped string, bi *debug.BuildInfo) string {
	version, revision, at, modified, goVersion := "(devel)", "", "", false, runtime.Version()
	if bi != nil {
		if v := bi.Main.Version; v != "" {
			version = v
		}
		goVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if stamped != "" && stamped != "dev" {
		version = stamped
	}
	var b strings.Builder
	fmt.Fprintf(&b, "weir %s\n", version)
	if revision == "" {
		b.WriteString("revision unknown (not built from a VCS checkout)\n")
	} else {
		var notes []string
		if at != "" {
			notes = append(notes, at)
		}
		if modified {
			notes = append(notes, "modified")
		}
		fmt.Fprintf(&b, "revision %s", revision)
		if len(notes) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(notes, ", "))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}
