package cli

import (
	"bytes"
	"strings"
	"testing"
)

// runExpr runs weir expr with stdin.
func runExpr(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	c := &command{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb}
	code = c.main(append([]string{"expr"}, args...))
	return code, out.String(), errb.String()
}

func TestExprOneShot(t *testing.T) {
	code, out, errs := runExpr("", `sha256(lower(trim(email))) + " " + $.key + " " + @key`, "--record", `{"email":" Ann@Example.org","key":"own"}`, "--key", "meta")
	if code != ExitOK || out != `"438c4c7afe600cdf1e455c369bec76dc970fc8ca463447c7b387a347f3c79331 own meta"`+"\n" || errs != "" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// Each line of stdin is a record; a record that fails is printed and the
// others are still evaluated; the exit code says one failed.
func TestExprOnNDJSON(t *testing.T) {
	code, out, _ := runExpr("{\"n\":\"2\"}\n\n{\"n\":\"x\"}\n{\"n\":\"40\"}\n", `int(n) + 1`)
	want := "3\nerror: int: the string \"x\" is not an integer\n41\n"
	if code != ExitRuntime || out != want {
		t.Errorf("exit %d, stdout %q, want %q", code, out, want)
	}
}

// A compile error is exit code 1, with the place and a caret; a bare
// metadata name warns.
func TestExprErrors(t *testing.T) {
	code, _, errs := runExpr("", `upper(nme) + uper(x)`, "--record", `{}`)
	if code != ExitConfig || !strings.Contains(errs, "1:14: unknown function uper (did you mean upper?)") ||
		!strings.Contains(errs, "\n  upper(nme) + uper(x)\n               ^") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	code, out, errs := runExpr("", `timestamp`, "--record", `{"timestamp":"mine"}`)
	if code != ExitOK || out != "\"mine\"\n" || !strings.Contains(errs, "warning: 1:1: timestamp is the record's field") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// The prompt reads expressions from a pipe too: :record sets the record.
func TestExprPrompt(t *testing.T) {
	code, out, _ := runExpr("a + 1\n:record {\"a\": 41}\na + 1\n:record\nuper(a)\n:bogus\n:quit\nnever\n")
	for _, want := range []string{"a missing field is null", "42\n", "{\"a\": 41}\n", "did you mean upper", "unknown command :bogus"} {
		if !strings.Contains(out, want) {
			t.Errorf("prompt output lacks %q:\n%s", want, out)
		}
	}
	if code != ExitOK || strings.Contains(out, "never") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}
