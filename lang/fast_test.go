package lang

import (
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/weir-etl/weir/record"
)

// The fast paths (fast.go) are checked against the generic nodes, the
// reference: an expression compiled with them and without them must give
// the same value, of the same kind, written the same, or the same error, on
// every record, through both ways fields are read (a map's object, a
// condition's lookup).

// outcome is what an evaluation gave, as the tests compare it.
type outcome struct {
	kind record.Kind
	json string
	err  string
	cond string // what Condition gave
}

// fatalT is what the checks need of *testing.T and *rapid.T.
type fatalT interface {
	Helper()
	Fatalf(format string, args ...any)
}

// evalBoth evaluates x on a record of value through a map's object and
// through a condition's lookup.
func evalBoth(t fatalT, x *Program, value string) (viaObj, viaLookup outcome) {
	t.Helper()
	run := func(lookup bool) outcome {
		e := NewEnv()
		r := new(record.Record)
		*r = record.New([]byte(value))
		if lookup {
			vals, found := make([]record.Value, len(x.fields)), make([]bool, len(x.fields))
			if err := r.Lookup(x.fields, vals, found); err != nil {
				t.Fatalf("%s: %v", value, err)
			}
			e.BindLookup(r, x.fields, vals, found)
		} else {
			var o record.Obj
			if err := r.Index(&o); err != nil {
				t.Fatalf("%s: %v", value, err)
			}
			e.Bind(r, &o)
		}
		var o outcome
		if b, err := e.Condition(x); err != nil {
			o.cond = "error: " + err.Error()
		} else {
			o.cond = strconv.FormatBool(b)
		}
		v, err := e.Eval(x)
		if err != nil {
			o.err = err.Error()
			return o
		}
		o.kind, o.json = v.Kind(), string(v.AppendJSON(nil))
		return o
	}
	return run(false), run(true)
}

// checkFastIsGeneric compiles src with and without the fast paths and
// compares their outcomes on value. An expression that does not compile
// must fail alike.
func checkFastIsGeneric(t fatalT, src, value string) {
	t.Helper()
	fast, e1 := compile(src, Options{}, false)
	generic, e2 := compile(src, Options{}, true)
	var err1, err2 error
	if e1 != nil {
		err1 = e1
	}
	if e2 != nil {
		err2 = e2
	}
	if (err1 == nil) != (err2 == nil) || err1 != nil && err1.Error() != err2.Error() {
		t.Fatalf("%s compiles differently: fast %v, generic %v", src, err1, err2)
	}
	if err1 != nil {
		return
	}
	fo, fl := evalBoth(t, fast, value)
	go1, gl := evalBoth(t, generic, value)
	if fo != go1 {
		t.Fatalf("%s on %s: fast path gives %+v, generic %+v", src, value, fo, go1)
	}
	if fl != gl {
		t.Fatalf("%s on %s, fields looked up: fast path gives %+v, generic %+v", src, value, fl, gl)
	}
}

// fastValues are field values at the edges the fast paths give up on or
// must keep: the ends of int64, integers a float64 cannot hold (2^53 + 1),
// literals that are whole but not written as integers (-0, 1e3, 12.0),
// floats, strings with escapes or bytes that are not UTF-8, and what is not
// a number at all.
var fastValues = []string{
	"0", "-0", "1", "-1", "2", "7", "1000", "100123", "-100123",
	"9223372036854775807", "-9223372036854775808", "9223372036854775808", "4611686018427387904",
	"3037000500", "-3037000500", "9007199254740992", "9007199254740993", "-9007199254740993",
	"1e3", "12.0", "0.5", "-2.5", "99999999999999999999",
	`"u"`, `""`, `"abc"`, `"caf\u00e9"`, `"a\"b"`, "\"\xff\xfe\"", `"\ud800"`,
	"null", "true", "[1]", `{"k":1}`,
}

// fastLeaves are the leaves of generated expressions: the fields a, b, c
// and s (n is never present), integer constants at the same edges, and
// constants the fast paths do not take.
var fastLeaves = []string{
	"a", "b", "c", "s", "n",
	"0", "1", "2", "7919", "1000", "100000", "9223372036854775807", "4611686018427387904",
	"3037000500", "9007199254740992", "9007199254740993",
	`"u"`, `""`, `"é"`, `"a\"b"`, "1.5", "0.1", "nil", "true",
}

var fastOps = []string{"+", "-", "*", "/", "%", "==", "!=", "<", ">", "<=", ">=", "&&", "||"}

func genFastExpr(depth int) *rapid.Generator[string] {
	leaf := rapid.OneOf(
		rapid.SampledFrom(fastLeaves),
		rapid.Custom(func(t *rapid.T) string { return strconv.Itoa(rapid.IntRange(-1000, 1000).Draw(t, "int")) }),
	)
	if depth == 0 {
		return leaf
	}
	sub := genFastExpr(depth - 1)
	return rapid.OneOf(
		leaf,
		rapid.Custom(func(t *rapid.T) string {
			op := rapid.SampledFrom(fastOps).Draw(t, "op")
			return "(" + sub.Draw(t, "left") + " " + op + " " + sub.Draw(t, "right") + ")"
		}),
		rapid.Custom(func(t *rapid.T) string { return "-(" + sub.Draw(t, "neg") + ")" }),
		rapid.Custom(func(t *rapid.T) string { return "!(" + sub.Draw(t, "not") + ")" }),
		rapid.Custom(func(t *rapid.T) string { return "string(" + sub.Draw(t, "str") + ")" }),
		rapid.Custom(func(t *rapid.T) string {
			return "(let a = " + sub.Draw(t, "let") + "; " + sub.Draw(t, "body") + ")"
		}),
	)
}

// Guarantee: the fast paths give what the generic nodes give, value or
// error, on generated expressions of integer arithmetic, comparisons,
// string() and concatenation, over records whose fields sit at the edges
// where the fast paths must give up.
func TestFastPathsAreGeneric(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		src := genFastExpr(rapid.IntRange(1, 3).Draw(t, "depth")).Draw(t, "expr")
		// Several records for each expression: most draws of an edge
		// need a particular pair of operands.
		for range 16 {
			var value strings.Builder
			value.WriteString("{")
			for i, name := range []string{"a", "b", "c", "s"} {
				if i > 0 {
					value.WriteString(",")
				}
				value.WriteString(`"` + name + `":` + rapid.SampledFrom(fastValues).Draw(t, name))
			}
			value.WriteString("}")
			checkFastIsGeneric(t, src, value.String())
		}
	})
}

// Guarantee: the same, for each shape the fast paths take, on every edge
// value, so that no edge is left to chance.
func TestFastPathsAreGenericAtTheEdges(t *testing.T) {
	shapes := []string{
		"a + b", "a - b", "a * b", "a / b", "a % b", "-a", "a == b", "a != b", "a < b", "a > b", "a <= b", "a >= b",
		"string(a)", "string(a + 0)", "string(-a)", `"u" + string(a % 1000)`, `a + b + "x"`, `"x" + a + b`,
		"((a * 7919) % 100000) / 100", "(let x = a; x * 2)", "a % -1", "a / 3", "1 / a", "a % 0", "a / 0",
		`"u" + string(id % 1000)`,
		// A power of two divides with a mask.
		"a % 1", "a % 2", "a % 1024", "a % 4611686018427387904", "-a % 8", "(a - 1) % 2 == 1",
	}
	// Conditions of comparisons decide on a path of their own.
	shapes = append(shapes, "a < b && b < 2", "a == 0 || b > 1", "!(a > b)", "not (a == 2)",
		"a >= 0 && (b != 2 || a < 7)", "!(a < 1 && b < 1) || a == b", "a > 0 and b > 0", "a < 0 or b < 0",
		`a > 0 && s == "u"`, `s == "u" || a > 0`, "!(a % 2 == 0)")
	// A comparison with a constant on the right has a path of its own.
	for _, op := range []string{"==", "!=", "<", ">", "<=", ">="} {
		for _, k := range []string{"0", "-1", "2", "9223372036854775807", "-9223372036854775808"} {
			shapes = append(shapes, "a "+op+" "+k)
		}
	}
	for _, src := range shapes {
		for _, a := range fastValues {
			for _, b := range []string{"0", "-1", "2", "-0", "9223372036854775807", "-9223372036854775808", "9007199254740993", "0.5", `"s"`, "null"} {
				checkFastIsGeneric(t, src, `{"a":`+a+`,"b":`+b+`,"id":`+a+`}`)
			}
		}
	}
}

// Guarantee: an Env does not keep a buffer that one record's long strings
// grew beyond maxScratch.
func TestEnvDropsALargeScratch(t *testing.T) {
	for _, size := range []int{maxScratch, maxScratch + 1} {
		e := NewEnv()
		e.scratch = make([]byte, 10, size)
		e.Release()
		if kept := e.scratch != nil; kept != (size <= maxScratch) || len(e.scratch) != 0 {
			t.Errorf("a scratch of capacity %d: kept %v with length %d", size, kept, len(e.scratch))
		}
	}
}
