package reference

import (
	"fmt"
	"strings"

	"github.com/weir-etl/weir/config"
)

// The generated reference sits between these lines in docs/config.md.
const (
	BeginMarker = "<!-- BEGIN REFERENCE: generated from the configuration structs by `go test ./internal/reference -update`; do not edit -->"
	EndMarker   = "<!-- END REFERENCE -->"
)

// Markdown returns the reference part of docs/config.md: the file's own keys
// and every type's options, as tables of option, type, default and
// description. It is the text between BeginMarker and EndMarker.
func Markdown() string {
	var b strings.Builder
	secs := Sections()
	types := Types()
	section := func(name string) {
		for _, s := range secs {
			if s.Name == name {
				fmt.Fprintf(&b, "%s\n\n", s.Doc)
				table(&b, s.Options)
			}
		}
	}
	kind := func(kind, title, sec string) {
		fmt.Fprintf(&b, "### %s\n\n", title)
		section(sec)
		for _, t := range types {
			if t.Kind != kind {
				continue
			}
			fmt.Fprintf(&b, "#### %s `%s`\n\n%s.\n\n", t.Kind, t.Name, upperFirst(t.Doc))
			if len(t.Options) == 0 {
				b.WriteString("No options of its own.\n\n")
				continue
			}
			table(&b, t.Options)
		}
	}
	kind(Source, "Sources", "source")
	kind(Transform, "Transforms", "transform")
	kind(Sink, "Sinks", "sink")
	b.WriteString("### checkpoint\n\n")
	section("checkpoint")
	b.WriteString("### metrics\n\n")
	section("metrics")
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// table writes opts, nested ones by their dotted paths, as a Markdown table.
func table(b *strings.Builder, opts []config.Option) {
	b.WriteString("| option | type | default | description |\n| --- | --- | --- | --- |\n")
	for _, f := range flatten("", opts) {
		def := ""
		if f.opt.Default != "" {
			def = code(yamlScalar(f.opt))
		}
		doc := f.opt.Doc
		if len(f.opt.Enum) > 0 && !strings.Contains(doc, f.opt.Enum[0]) {
			doc += " One of " + strings.Join(f.opt.Enum, ", ") + "."
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", code(f.path), cell(typeText(f.opt)), def, cell(doc))
	}
	b.WriteString("\n")
}

// cell escapes what a Markdown table cell cannot hold as it is: a pipe
// would end the cell, and <...> would be taken for HTML.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(s)
}

// code writes s as a code span in a table cell: only a pipe needs escaping
// there (entities are not decoded inside code).
func code(s string) string { return "`" + strings.ReplaceAll(s, "|", `\|`) + "`" }

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
