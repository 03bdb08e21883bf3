package reference

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/lang"
)

// List writes every type, by kind, with its one-line doc: `weir list`.
func List(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	last := ""
	for _, t := range Types() {
		if t.Kind != last {
			if last != "" {
				fmt.Fprintln(tw)
			}
			fmt.Fprintf(tw, "%s types:\n", strings.ToUpper(t.Kind[:1])+t.Kind[1:])
			last = t.Kind
		}
		fmt.Fprintf(tw, "  %s\t%s\n", t.Name, t.Doc)
	}
	tw.Flush()
	fmt.Fprintln(w, "\n\"weir help TYPE\" shows a type's options; \"weir help source\", \"sink\", \"transform\", \"checkpoint\" and \"metrics\" the keys of the file itself;\n\"weir help functions\" the expression language's functions.")
}

// Topics lists what Help knows besides type names.
func Topics() []string {
	var out []string
	for _, s := range Sections() {
		out = append(out, s.Name)
	}
	return append(out, "functions", "a function's name")
}

// Help writes the help of topic: a type (every type of that name: file is a
// source and a sink) or a section (Topics). It reports whether it knows the
// topic.
func Help(w io.Writer, topic string) bool {
	if topic == "functions" {
		HelpFunctions(w)
		return true
	}
	found := false
	for _, s := range Sections() {
		if s.Name == topic {
			fmt.Fprintf(w, "%s\n\n", s.Doc)
			writeOptions(w, s.Options)
			found = true
		}
	}
	for _, t := range Lookup(topic) {
		if found {
			fmt.Fprintln(w)
		}
		found = true
		writeType(w, t)
	}
	if _, ok := lang.LookupFunc(topic); ok { // map is a transform and a function
		if found {
			fmt.Fprintln(w)
		}
		found = HelpFunction(w, topic)
	}
	return found
}

func writeType(w io.Writer, t Type) {
	fmt.Fprintf(w, "%s %s: %s\n\n", t.Kind, t.Name, t.Doc)
	common := map[string]string{Source: "type, max_in_flight_batches, max_in_flight_bytes", Transform: "type, inputs",
		Sink: "type, inputs, acknowledgements, batch, retry, on_failure, dead_letter, give_up_after, on_give_up"}[t.Kind]
	if len(t.Options) == 0 {
		fmt.Fprintf(w, "No options of its own; every %s takes %s (weir help %s).\n", t.Kind, common, t.Kind)
	} else {
		fmt.Fprintf(w, "Every %s also takes %s (weir help %s).\n\nOptions:\n", t.Kind, common, t.Kind)
		writeOptions(w, t.Options)
	}
	fmt.Fprintf(w, "\nSkeleton (defaults filled in, the rest commented out):\n\n")
	for _, line := range strings.Split(strings.TrimRight(Skeleton(t), "\n"), "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
}

// writeOptions writes one entry per option: its path, type, default and
// unit, then its doc wrapped and indented.
func writeOptions(w io.Writer, opts []config.Option) {
	for _, f := range flatten("", opts) {
		head := "  " + f.path + "  (" + typeText(f.opt)
		if f.opt.Default != "" {
			head += ", default " + yamlScalar(f.opt)
		}
		if len(f.opt.Enum) > 0 {
			head += "; one of " + strings.Join(f.opt.Enum, ", ")
		}
		fmt.Fprintln(w, head+")")
		for _, line := range wrap(f.opt.Doc, 72) {
			fmt.Fprintf(w, "      %s\n", line)
		}
	}
}

// wrap breaks s into lines of at most width characters, at spaces.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// Skeleton returns a pipeline file's section with one component of type t:
// every option with a default at it, the others commented out. It is where
// a new pipeline starts (what `benthos create` and `vector generate` give).
func Skeleton(t Type) string {
	var b strings.Builder
	section := t.Kind + "s"
	fmt.Fprintf(&b, "%s:\n  my_%s:\n    type: %s\n", section, t.Name, t.Name)
	if t.Kind != Source {
		b.WriteString("    inputs: [source_or_transform]\n")
	}
	skeleton(&b, "    ", t.Options)
	return b.String()
}

func skeleton(b *strings.Builder, indent string, opts []config.Option) {
	for _, o := range opts {
		switch {
		case o.Kind == config.KindObject && len(o.Options) > 0:
			fmt.Fprintf(b, "%s%s:\n", indent, o.Name)
			skeleton(b, indent+"  ", o.Options)
		case o.Default != "":
			fmt.Fprintf(b, "%s%s: %s\n", indent, o.Name, yamlScalar(o))
		default:
			fmt.Fprintf(b, "%s# %s: %s\n", indent, o.Name, placeholder(o))
		}
	}
}

// yamlScalar writes o's default so that YAML reads it back as the same
// value: a string that YAML would take for something else is quoted.
func yamlScalar(o config.Option) string {
	d := o.Default
	if o.Kind != config.KindString {
		return d
	}
	switch strings.ToLower(d) {
	case "true", "false", "yes", "no", "on", "off", "null", "~":
		return fmt.Sprintf("%q", d)
	}
	if strings.ContainsAny(d[:1], "{[&*!|>'\"%@`#,?:-0123456789 ") || strings.ContainsAny(d, ":#{}") {
		return fmt.Sprintf("%q", d)
	}
	return d
}

// placeholder is what a commented-out option shows as its value.
func placeholder(o config.Option) string {
	switch o.Kind {
	case config.KindList:
		return "[]"
	case config.KindMap, config.KindObject:
		return "{}"
	case config.KindDuration:
		return "1s"
	case config.KindSize:
		return "1MiB"
	case config.KindBool:
		return "false"
	case config.KindInt, config.KindNumber:
		return "0"
	}
	return `""`
}
