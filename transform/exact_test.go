package transform_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/transform"
)

// setResult runs a map setting "out" to src on a record holding value, and
// returns the output's "out" member as written, or the record error.
func setResult(t *testing.T, src, value string) (string, error) {
	t.Helper()
	m, err := transform.NewMap(transform.MapConfig{Set: []transform.Assignment{{Field: "out", Expr: src}}})
	if err != nil {
		return "", err // a load error: 1e19 is a constant
	}
	r := record.New([]byte(value))
	outs, err := m.Process(&r, nil)
	if err != nil {
		return "", err
	}
	b, _ := outs[0].Value()
	for _, mb := range members(t, b) {
		if mb.name == "out" {
			return mb.raw, nil
		}
	}
	t.Fatalf("%s on %s: no out in %s", src, value, b)
	return "", nil
}

// Guarantee: arithmetic never wraps or rounds in silence, conversions are
// exact or a record error, and the errors name the expression and the
// values in weir's words.
func TestExpressionsAreExactOrFail(t *testing.T) {
	const rec = `{"a":2,"top":9223372036854775807,"bottom":-9223372036854775808,"big":12345678901234567891,` +
		`"odd":9007199254740993,"f":2.5,"tenth":0.1,"tiny":0.10000000000000000001,"s":"42","txt":"x","n":null,"whole":7.0,"e":1e19,"exp":1.152921504606847e18}`
	cases := []struct {
		src, want, err string // want: the member as written; err: part of the record error
	}{
		// Overflow.
		{`int(a) * 9223372036854775807`, "", `integer overflow: 2 * 9223372036854775807 does not fit int64`},
		{`top + 1`, "", `integer overflow: 9223372036854775807 + 1`},
		{`bottom - 1`, "", `integer overflow`},
		{`-bottom`, "", `integer overflow: -(-9223372036854775808)`},
		{`bottom * -1`, "", `integer overflow`},
		{`abs(bottom)`, "", `integer overflow`},
		{`top - 1`, "9223372036854775806", ""},
		{`bottom % -1`, "0", ""},
		{`odd + 1`, "9007199254740994", ""},
		{`odd % 2`, "1", ""},
		// Numbers beyond int64 and float64: exact to copy and compare, an
		// error to compute with.
		{`big`, "12345678901234567891", ""},
		{`big > top`, "true", ""},
		{`big == 12345678901234567890.0`, "false", ""},
		{`string(big)`, `"12345678901234567891"`, ""},
		{`big + 1`, "", `fits neither int64 nor float64 exactly`},
		{`tiny * 2`, "", `fits neither int64 nor float64 exactly`},
		{`tiny`, "0.10000000000000000001", ""},
		{`odd * 1.5`, "", `has no exact float64`},
		{`odd / 1`, "", `has no exact float64`},
		{`tenth * 3`, "0.30000000000000004", ""},
		// Conversions.
		{`int(e)`, "", `int: 1e19 is out of the int64 range`},
		{`int(1e19)`, "", `is out of the int64 range`},
		{`int(-9.9)`, "-9", ""},
		{`int(exp)`, "1152921504606847000", ""}, // the literal's value, not its nearest float64 (2^60)
		{`int(f)`, "2", ""},
		{`int(s)`, "42", ""},
		{`int(txt)`, "", `int: the string "x" is not an integer`},
		{`int("99999999999999999999")`, "", `out of the int64 range`},
		{`int(n)`, "", `int: the value is null (a missing field?)`},
		{`int(missing)`, "", `int: the value is null`},
		{`float(odd)`, "", `float: 9007199254740993`},
		{`float(a)`, "2", ""},
		{`float(n)`, "", `float: the value is null`},
		{`string(n)`, "", `string: the value is null`},
		{`len(n)`, "", `len: the value is null`},
		{`string(whole)`, `"7.0"`, ""},
		{`whole % 2`, "1", ""},
		// Division and results JSON cannot hold.
		{`a / 0`, "", `division by zero`},
		{`a % 0`, "", `modulo by zero`},
		{`f ** 10000`, "", `which JSON cannot hold`},
		{`1 / 4`, "0.25", ""},
		// Type errors are weir's words, not Go's.
		{`txt + 1`, "", `mismatched types string and int`},
		{`n + 1`, "", `a missing field is null`},
		{`n.x`, "", `cannot read .x of null (a missing field?)`},
	}
	for _, c := range cases {
		got, err := setResult(t, c.src, rec)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.src, err)
		case c.err == "" && got != c.want:
			t.Errorf("%s = %s, want %s", c.src, got, c.want)
		case c.err != "" && err == nil:
			t.Errorf("%s = %s, want an error containing %q", c.src, got, c.err)
		case c.err != "" && (!strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), fmt.Sprintf("expression %q", c.src))):
			t.Errorf("%s: error %q, want it to contain %q and name the expression", c.src, err, c.err)
		}
	}
}

// Guarantee: strings keep their bytes through expressions: bytes that are
// not UTF-8 are copied and compared as they are; a function that would
// replace them fails the record instead; an escape is written back as an
// equivalent form, never as U+FFFD.
func TestExpressionsKeepStringBytes(t *testing.T) {
	rec := "{\"bad\":\"x\xffy\",\"esc\":\"\\ud800\",\"pair\":\"\\ud83d\\ude00\",\"ok\":\"caf\\u00e9\"}"
	cases := []struct{ src, want, err string }{
		{`bad`, "\"x\xffy\"", ""},
		{`bad + "!"`, "\"x\xffy!\"", ""},
		{`bad == bad && bad != "xy"`, "true", ""},
		{`len(bad) > 0`, "true", ""},
		{`upper(bad)`, "", `the string holds bytes that are not UTF-8, which upper would replace`},
		{`trim(bad)`, "\"x\xffy\"", ""}, // trimming white space leaves other bytes as they are
		{`trim(bad, "x")`, "", `not UTF-8`},
		{`esc`, `"\ud800"`, ""},
		{`esc + ""`, `"\ud800"`, ""},
		{`pair + ""`, `"😀"`, ""},
		{`upper(ok)`, `"CAFÉ"`, ""},
		{`ok`, `"caf\u00e9"`, ""},
	}
	for _, c := range cases {
		got, err := setResult(t, c.src, rec)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.src, err)
		case c.err == "" && got != c.want:
			t.Errorf("%s = %q, want %q", c.src, got, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s = %q, %v; want an error containing %q", c.src, got, err, c.err)
		}
	}
}
