package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/weir-etl/weir/lang"
	"github.com/weir-etl/weir/record"
)

const exprDoc = `Evaluates an expression (docs/expressions.md) with the engine the
pipeline runs, and prints each result as JSON, or the record error.

  weir expr 'sha256(lower(email))' --record '{"email":"Ann@Example.org"}'
  weir expr 'format_time(parse_time(ts), "%Y-%m")' < records.ndjson
  weir expr                 a prompt: type expressions; :record {...} sets the
                            record they read, :help lists the commands

With an expression and no --record, each line of stdin is a record (NDJSON).
The metadata (@key, @headers, @timestamp, @origin) comes from the flags.
Exit codes: 0, 1 when the expression does not compile, 3 when a record
failed (each failure is printed; the others are still evaluated).`

// multiFlag is a repeatable flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

// exprMeta is the metadata weir expr gives the records.
type exprMeta struct {
	key       string
	headers   multiFlag
	timestamp string
	ts        time.Time
}

func (m *exprMeta) apply(r *record.Record) {
	if m.key != "" {
		r.Key = []byte(m.key)
	}
	for _, h := range m.headers {
		k, v, _ := strings.Cut(h, "=")
		r.Headers = append(r.Headers, record.Header{Key: k, Value: []byte(v)})
	}
	r.Time = m.ts
	r.Origin = record.Origin{Source: "expr", Partition: "expr/0"}
}

func (c *command) expr(args []string) int {
	fs := c.flagSet("expr")
	rec := fs.String("record", "", "evaluate on this one record (a JSON object) instead of stdin's")
	var meta exprMeta
	fs.StringVar(&meta.key, "key", "", "the records' @key")
	fs.Var(&meta.headers, "header", "a header of the records, `name=value` (repeatable)")
	fs.StringVar(&meta.timestamp, "timestamp", "", "the records' @timestamp, RFC 3339 (default: now)")
	if code, ok := c.parse(fs, args, "weir expr [EXPRESSION] [--record JSON] [--key K] [--header k=v] [--timestamp T]", exprDoc); !ok {
		return code
	}
	meta.ts = time.Now()
	if meta.timestamp != "" {
		t, err := time.Parse(time.RFC3339Nano, meta.timestamp)
		if err != nil {
			return c.usageErr(fs.Name(), fmt.Sprintf("--timestamp %q is not an RFC 3339 time", meta.timestamp))
		}
		meta.ts = t
	}
	switch {
	case fs.NArg() > 1:
		return c.usageErr(fs.Name(), "one expression at a time (quote it: weir expr 'a + b')")
	case fs.NArg() == 0:
		return c.exprPrompt(&meta, *rec)
	}
	prog, code := c.compileExpr(c.stderr, fs.Arg(0))
	if prog == nil {
		return code
	}
	e := lang.NewEnv()
	if *rec != "" {
		if !c.evalPrint(c.stdout, e, prog, []byte(*rec), &meta) {
			return ExitRuntime
		}
		return ExitOK
	}
	code = ExitOK
	sc := bufio.NewScanner(c.stdin)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		if !c.evalPrint(c.stdout, e, prog, line, &meta) {
			code = ExitRuntime
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(c.stderr, "weir: reading stdin:", err)
		return ExitRuntime
	}
	return code
}

// compileExpr compiles src as a map's set expression is compiled, printing
// a problem with its caret, and the warnings.
func (c *command) compileExpr(w io.Writer, src string) (*lang.Program, int) {
	prog, err := lang.Compile(src, lang.Options{})
	if err != nil {
		var le *lang.Error
		if errors.As(err, &le) {
			fmt.Fprintf(w, "weir: %d:%d: %s\n%s\n", le.Line, le.Column, le.Msg, le.Excerpt("  "))
		} else {
			fmt.Fprintln(w, "weir:", err)
		}
		return nil, ExitConfig
	}
	for _, warn := range prog.Warnings() {
		fmt.Fprintf(w, "warning: %d:%d: %s\n%s\n", warn.Line, warn.Column, warn.Msg, warn.Excerpt("  "))
	}
	return prog, ExitOK
}

// evalPrint evaluates prog on the record value and prints the result, or
// the error; it reports whether the record gave a value.
func (c *command) evalPrint(w io.Writer, e *lang.Env, prog *lang.Program, value []byte, meta *exprMeta) bool {
	r := record.New(value)
	meta.apply(&r)
	var o record.Obj
	if err := r.Index(&o); err != nil {
		fmt.Fprintf(w, "error: the record is not a JSON object: %v\n", err)
		return false
	}
	e.Bind(&r, &o)
	v, err := e.Eval(prog)
	switch {
	case err == lang.ErrDrop:
		fmt.Fprintln(w, "(dropped)")
	case err != nil:
		var re *lang.RecordError
		if errors.As(err, &re) {
			err = re.Err
		}
		fmt.Fprintf(w, "error: %v\n", err)
		return false
	default:
		fmt.Fprintf(w, "%s\n", v.AppendJSON(nil))
	}
	return true
}

const promptHelp = `Type an expression to evaluate it on the record, or:
  :record {...}   set the record (a JSON object); :record alone shows it
  :help           this
  :quit           leave (so do Ctrl-D and Ctrl-C)
"weir help functions" lists the functions.`

// exprPrompt reads expressions, with line editing and history on a
// terminal (x/term's), one per line from a pipe.
func (c *command) exprPrompt(meta *exprMeta, rec string) int {
	if rec == "" {
		rec = "{}"
	}
	in, out := c.stdin, c.stdout
	var readLine func() (string, error)
	var restore func()
	if f, ok := in.(*os.File); ok && isTerminal(f) {
		state, err := term.MakeRaw(int(f.Fd()))
		if err == nil {
			restore = func() { term.Restore(int(f.Fd()), state) }
			t := term.NewTerminal(struct {
				io.Reader
				io.Writer
			}{f, out}, "> ")
			readLine, out = t.ReadLine, t
		}
	}
	if restore != nil {
		defer restore()
	}
	if readLine == nil {
		sc := bufio.NewScanner(in)
		readLine = func() (string, error) {
			if !sc.Scan() {
				if sc.Err() != nil {
					return "", sc.Err()
				}
				return "", io.EOF
			}
			return sc.Text(), nil
		}
	}
	fmt.Fprintln(out, "weir expr: an expression per line on the record "+rec+"; :help for more")
	e := lang.NewEnv()
	for {
		line, err := readLine()
		if err != nil {
			return ExitOK
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case line == ":quit" || line == ":q":
			return ExitOK
		case line == ":help":
			fmt.Fprintln(out, promptHelp)
		case line == ":record":
			fmt.Fprintln(out, rec)
		case strings.HasPrefix(line, ":record "):
			next := strings.TrimSpace(strings.TrimPrefix(line, ":record "))
			var o record.Obj
			if err := o.Reset([]byte(next)); err != nil {
				fmt.Fprintf(out, "error: not a JSON object: %v\n", err)
				continue
			}
			rec = next
		case strings.HasPrefix(line, ":"):
			fmt.Fprintf(out, "unknown command %s; :help lists them\n", line)
		default:
			if prog, _ := c.compileExpr(out, line); prog != nil {
				c.evalPrint(out, e, prog, []byte(rec), meta)
			}
		}
	}
}
