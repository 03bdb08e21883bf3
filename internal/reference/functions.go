package reference

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/weir-etl/weir/lang"
)

// The expression language's functions, described from lang's table: `weir
// help functions`, `weir help NAME`, the reference in docs/expressions.md
// (FunctionsMarkdown, kept equal to the file by a test) and the schema's
// completions.

// The generated function reference sits between these lines in
// docs/expressions.md.
const (
	FunctionsBegin = "<!-- BEGIN FUNCTIONS: generated from lang's function table by `go test ./internal/reference -update`; do not edit -->"
	FunctionsEnd   = "<!-- END FUNCTIONS -->"
)

// firstSentence is a doc's first sentence, for lists.
func firstSentence(doc string) string {
	if i := strings.Index(doc, ". "); i >= 0 {
		return doc[:i+1]
	}
	return doc
}

// HelpFunctions writes every function by category, one line each.
func HelpFunctions(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	last := ""
	for _, f := range lang.Functions() {
		if f.Category != last {
			if last != "" {
				fmt.Fprintln(tw)
			}
			fmt.Fprintf(tw, "%s:\n", f.Category)
			last = f.Category
		}
		fmt.Fprintf(tw, "  %s\t%s\n", f.Name, firstSentence(f.Doc))
	}
	tw.Flush()
	fmt.Fprintln(w, "\n\"weir help NAME\" shows a function's signature, doc and example; docs/expressions.md has the language.")
}

// HelpFunction writes the function called name (or an alias of it) and
// reports whether there is one.
func HelpFunction(w io.Writer, name string) bool {
	f, ok := lang.LookupFunc(name)
	if !ok {
		return false
	}
	fmt.Fprintf(w, "function %s (%s)\n\n", f.Signature(), f.Category)
	for _, line := range wrap(f.Doc, 76) {
		fmt.Fprintf(w, "  %s\n", line)
	}
	fmt.Fprintf(w, "\n  %s\n  => %s\n", f.Example, f.Output)
	if len(f.Aliases) > 0 {
		fmt.Fprintf(w, "\nAlso called %s.\n", strings.Join(f.Aliases, ", "))
	}
	return true
}

// FunctionsMarkdown returns the function reference of docs/expressions.md.
func FunctionsMarkdown() string {
	var b strings.Builder
	last := ""
	for _, f := range lang.Functions() {
		if f.Category != last {
			fmt.Fprintf(&b, "### %s\n\n", f.Category)
			last = f.Category
		}
		fmt.Fprintf(&b, "#### `%s`\n\n%s", f.Signature(), f.Doc)
		if len(f.Aliases) > 0 {
			fmt.Fprintf(&b, " Also `%s`.", strings.Join(f.Aliases, "`, `"))
		}
		fmt.Fprintf(&b, "\n\n    %s\n    => %s\n\n", f.Example, f.Output)
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// snippets are the schema's completions of an expression option: one per
// function, with its signature and doc.
func snippets() []any {
	var out []any
	for _, f := range lang.Functions() {
		var ps []string
		for i, p := range f.Params {
			if p.Optional || p.Variadic {
				break
			}
			ps = append(ps, fmt.Sprintf("${%d:%s}", i+1, p.Name))
		}
		out = append(out, map[string]any{
			"label":       f.Name,
			"description": f.Signature() + ": " + firstSentence(f.Doc),
			"body":        f.Name + "(" + strings.Join(ps, ", ") + ")",
		})
	}
	return out
}
