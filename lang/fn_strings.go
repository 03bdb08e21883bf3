package lang

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/weir-etl/weir/record"
)

func init() {
	s1 := []Param{{Name: "s", Type: TString | TNull}}
	s2 := func(b string) []Param {
		return []Param{{Name: "s", Type: TString | TNull}, {Name: b, Type: TString | TNull}}
	}
	mapper := func(name, doc, ex, out string, fn func(string) string, aliases ...string) *Func {
		return &Func{Name: name, Category: "strings", Params: s1, Result: TString, Doc: doc, Example: ex, Output: out, Aliases: aliases,
			fn1: func(v record.Value) (record.Value, error) {
				s, err := text(name, v)
				if err != nil {
					return s2v(s, err)
				}
				return sv(fn(s)), nil
			}}
	}
	register(
		mapper("upper", "The string in upper case (Unicode).", `upper("héllo")`, `"HÉLLO"`, strings.ToUpper),
		mapper("lower", "The string in lower case (Unicode).", `lower("ÀB")`, `"àb"`, strings.ToLower),
		mapper("title", "Each word's first letter in upper case.", `title("hello wide world")`, `"Hello Wide World"`, titleCase),
		mapper("capitalize", "The first letter in upper case, the rest as it is.", `capitalize("éa b")`, `"Éa b"`, capitalize),
		mapper("snake_case", "Words joined by _ in lower case: camelCase, kebab-case and spaces split words.", `snake_case("userID HTTPServer")`, `"user_id_http_server"`, func(s string) string { return joinWords(s, "_", false) }),
		mapper("kebab_case", "Words joined by - in lower case.", `kebab_case("User Name")`, `"user-name"`, func(s string) string { return joinWords(s, "-", false) }),
		mapper("camel_case", "Words joined in camelCase.", `camel_case("user_name id")`, `"userNameId"`, func(s string) string { return joinWords(s, "", true) }),
		&Func{Name: "trim", Category: "strings", Params: []Param{{Name: "s", Type: TString | TNull}, {Name: "cutset", Type: TString | TNull, Optional: true}},
			Result: TString, Doc: "Without leading and trailing white space, or without the characters of cutset.", Example: `trim("  a b ")`, Output: `"a b"`,
			fn2: trimmer("trim", strings.TrimSpace, strings.Trim)},
		&Func{Name: "trim_left", Category: "strings", Params: []Param{{Name: "s", Type: TString | TNull}, {Name: "cutset", Type: TString | TNull, Optional: true}},
			Result: TString, Doc: "Without leading white space, or the characters of cutset.", Example: `trim_left("xxab", "x")`, Output: `"ab"`,
			fn2: trimmer("trim_left", func(s string) string { return strings.TrimLeftFunc(s, unicode.IsSpace) }, strings.TrimLeft)},
		&Func{Name: "trim_right", Category: "strings", Params: []Param{{Name: "s", Type: TString | TNull}, {Name: "cutset", Type: TString | TNull, Optional: true}},
			Result: TString, Doc: "Without trailing white space, or the characters of cutset.", Example: `trim_right("ab\n")`, Output: `"ab"`,
			fn2: trimmer("trim_right", func(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) }, strings.TrimRight)},
		&Func{Name: "trim_prefix", Category: "strings", Params: s2("prefix"), Result: TString, Aliases: []string{"trimPrefix"},
			Doc: "Without prefix at the start, if it is there.", Example: `trim_prefix("v1.2", "v")`, Output: `"1.2"`,
			fn2: strFn2("trim_prefix", func(a, b string) record.Value { return sv(strings.TrimPrefix(a, b)) })},
		&Func{Name: "trim_suffix", Category: "strings", Params: s2("suffix"), Result: TString, Aliases: []string{"trimSuffix"},
			Doc: "Without suffix at the end, if it is there.", Example: `trim_suffix("a.json", ".json")`, Output: `"a"`,
			fn2: strFn2("trim_suffix", func(a, b string) record.Value { return sv(strings.TrimSuffix(a, b)) })},
		&Func{Name: "has_prefix", Category: "strings", Params: s2("prefix"), Result: TBool, Aliases: []string{"hasPrefix", "starts_with"},
			Doc: "Whether s starts with prefix.", Example: `has_prefix("order-1", "order-")`, Output: `true`,
			fn2: strFn2("has_prefix", func(a, b string) record.Value { return record.BoolValue(strings.HasPrefix(a, b)) })},
		&Func{Name: "has_suffix", Category: "strings", Params: s2("suffix"), Result: TBool, Aliases: []string{"hasSuffix", "ends_with"},
			Doc: "Whether s ends with suffix.", Example: `has_suffix("a.json", ".json")`, Output: `true`,
			fn2: strFn2("has_suffix", func(a, b string) record.Value { return record.BoolValue(strings.HasSuffix(a, b)) })},
		&Func{Name: "contains", Category: "strings", Params: s2("sub"), Result: TBool,
			Doc: "Whether s contains sub (also the operator: s contains sub).", Example: `contains("a-b-c", "b")`, Output: `true`,
			fn2: strFn2("contains", func(a, b string) record.Value { return record.BoolValue(strings.Contains(a, b)) })},
		&Func{Name: "index_of", Category: "strings", Params: s2("sub"), Result: TInt, Aliases: []string{"indexOf"},
			Doc: "The index, in characters, of the first sub in s; -1 if none.", Example: `index_of("héllo", "l")`, Output: `2`,
			fn2: strFn2("index_of", func(a, b string) record.Value { return runeIndex(a, strings.Index(a, b)) })},
		&Func{Name: "last_index_of", Category: "strings", Params: s2("sub"), Result: TInt, Aliases: []string{"lastIndexOf"},
			Doc: "The index, in characters, of the last sub in s; -1 if none.", Example: `last_index_of("a.b.c", ".")`, Output: `3`,
			fn2: strFn2("last_index_of", func(a, b string) record.Value { return runeIndex(a, strings.LastIndex(a, b)) })},
		&Func{Name: "substr", Category: "strings", Params: []Param{{Name: "s", Type: TString | TNull}, {Name: "start", Type: TNumber}, {Name: "end", Type: TNumber | TNull, Optional: true}},
			Result: TString, Doc: "The characters of s from start up to end (not included); negative counts from the end. Out of range is cut to the string.",
			Example: `substr("héllo", 1, 3)`, Output: `"él"`, fn3: substr},
		&Func{Name: "truncate", Category: "strings", Params: []Param{{Name: "s", Type: TString | TNull}, {Name: "n", Type: TNumber}, {Name: "suffix", Type: TString | TNull, Optional: true}},
			Result: TString, Doc: "s cut to n characters, the suffix (\"\" by default) included when it is cut.",
			Example: `truncate("a long title", 6, "…")`, Output: `"a lon…"`, fn3: truncate},
		&Func{Name: "pad_left", Category: "strings", Params: []Param{{Name: "s", Type: TString | TNull}, {Name: "width", Type: TNumber}, {Name: "pad", Type: TString | TNull, Optional: true}},
			Result: TString, Doc: "s padded at the start to width characters with pad (a space by default).", Example: `pad_left("7", 3, "0")`, Output: `"007"`,
			fn3: padder("pad_left", true)},
		&Func{Name: "pad_right", Category: "strings", Params: []Param{{Name: "s", Type: TString | TNull}, {Name: "width", Type: TNumber}, {Name: "pad", Type: TString | TNull, Optional: true}},
			Result: TString, Doc: "s padded at the end to width characters with pad (a space by default).", Example: `pad_right("ab", 4, ".")`, Output: `"ab.."`,
			fn3: padder("pad_right", false)},
		&Func{Name: "repeat", Category: "strings", Params: []Param{{Name: "s", Type: TString | TNull}, {Name: "n", Type: TNumber}}, Result: TString,
			Doc: "s repeated n times (at most 16 MiB in all).", Example: `repeat("ab", 3)`, Output: `"ababab"`, fn2: repeat},
		&Func{Name: "replace", Category: "strings", Params: []Param{{Name: "s", Type: TString | TNull}, {Name: "old", Type: TString}, {Name: "new", Type: TString}}, Result: TString,
			Doc: "s with every old replaced by new (literally; regex_replace takes a pattern).", Example: `replace("a-b-c", "-", "+")`, Output: `"a+b+c"`,
			fn3: func(a, b, c record.Value) (record.Value, error) {
				s, err := str("replace", a)
				if err != nil {
					return s2v("", err)
				}
				o, n, err := strings2("replace", b, c)
				if err != nil {
					return s2v("", err)
				}
				return sv(strings.ReplaceAll(s, o, n)), nil
			}},
		&Func{Name: "split", Category: "strings", Params: []Param{{Name: "s", Type: TString | TNull}, {Name: "sep", Type: TString}, {Name: "n", Type: TNumber | TNull, Optional: true}},
			Result: TArray, Doc: "The parts of s between each sep; with n, at most n parts (the last holds the rest). An empty s gives [].",
			Example: `split("a,b,,c", ",")`, Output: `["a", "b", "", "c"]`, fn3: split},
		&Func{Name: "join", Category: "strings", Params: []Param{{Name: "parts", Type: TArray | TNull}, {Name: "sep", Type: TString | TNull, Optional: true}},
			Result: TString, Doc: "The strings of parts joined by sep (\"\" by default); numbers and bools as their text, null as \"\".",
			Example: `join(["a", 1, true], "-")`, Output: `"a-1-true"`, fn2: join},
		&Func{Name: "reverse", Category: "strings", Params: []Param{{Name: "x", Type: TString | TArray | TNull}}, Result: TString | TArray,
			Doc: "A string's characters, or an array's elements, in reverse order.", Example: `reverse("abc")`, Output: `"cba"`, fn1: reverse},
		&Func{Name: "format", Category: "strings", Params: []Param{{Name: "layout", Type: TString}, {Name: "args", Type: TAny, Variadic: true}}, Result: TString,
			Doc:     "printf-style: %s a value's text (numbers as their literal, objects as JSON), %d an integer, %f a number (%.2f: to 2 places, exactly), %x hex of an integer or string, %q a quoted string, %v as %s, %% a percent sign; a width (%5d, %-5s, %05d) pads.",
			Example: `format("%s owes %.2f (%05d)", "ann", 12.5, 42)`, Output: `"ann owes 12.50 (00042)"`, fnN: format},
	)
}

// s2v returns a failed string function's result.
func s2v(_ string, err error) (record.Value, error) { return record.Value{}, err }

func strFn2(name string, fn func(a, b string) record.Value) func(a, b record.Value) (record.Value, error) {
	return func(a, b record.Value) (record.Value, error) {
		x, y, err := strings2(name, a, b)
		if err != nil {
			return record.Value{}, err
		}
		return fn(x, y), nil
	}
}

func trimmer(name string, space func(string) string, cut func(s, cutset string) string) func(a, b record.Value) (record.Value, error) {
	return func(a, b record.Value) (record.Value, error) {
		s, err := str(name, a)
		if err != nil {
			return record.Value{}, err
		}
		if b.IsNull() {
			return sv(space(s)), nil
		}
		set, err := str(name, b)
		if err != nil {
			return record.Value{}, err
		}
		if !utf8.ValidString(s) {
			return record.Value{}, fnError(name, "the string holds bytes that are not UTF-8, which %s would replace", name)
		}
		return sv(cut(s, set)), nil
	}
}

func runeIndex(s string, byteIndex int) record.Value {
	if byteIndex < 0 {
		return record.IntValue(-1)
	}
	return record.IntValue(int64(utf8.RuneCountInString(s[:byteIndex])))
}

func substr(a, b, c record.Value) (record.Value, error) {
	s, err := str("substr", a)
	if err != nil {
		return record.Value{}, err
	}
	n := int64(utf8.RuneCountInString(s))
	lo, err := integer("substr", "start", b)
	if err != nil {
		return record.Value{}, err
	}
	hi, err := optInt("substr", "end", c, n)
	if err != nil {
		return record.Value{}, err
	}
	norm := func(i int64) int {
		if i < 0 {
			i += n
		}
		return int(max(0, min(i, n)))
	}
	l, h := norm(lo), norm(hi)
	return sv(runeSlice(s, l, max(l, h))), nil
}

func truncate(a, b, c record.Value) (record.Value, error) {
	s, err := str("truncate", a)
	if err != nil {
		return record.Value{}, err
	}
	n, err := integer("truncate", "n", b)
	if err != nil {
		return record.Value{}, err
	}
	suffix, err := optStr("truncate", c, "")
	if err != nil {
		return record.Value{}, err
	}
	if n < 0 {
		return record.Value{}, fnError("truncate", "n must be 0 or more, not %d", n)
	}
	if int64(utf8.RuneCountInString(s)) <= n {
		return sv(s), nil
	}
	keep := n - int64(utf8.RuneCountInString(suffix))
	if keep < 0 {
		return record.Value{}, fnError("truncate", "the suffix %q is longer than %d characters", suffix, n)
	}
	return sv(runeSlice(s, 0, int(keep)) + suffix), nil
}

func padder(name string, left bool) func(a, b, c record.Value) (record.Value, error) {
	return func(a, b, c record.Value) (record.Value, error) {
		s, err := str(name, a)
		if err != nil {
			return record.Value{}, err
		}
		w, err := integer(name, "width", b)
		if err != nil {
			return record.Value{}, err
		}
		pad, err := optStr(name, c, " ")
		if err != nil {
			return record.Value{}, err
		}
		if pad == "" {
			return record.Value{}, fnError(name, "the pad string is empty")
		}
		if w > maxBuilt {
			return record.Value{}, fnError(name, "width %d is over %d", w, maxBuilt)
		}
		missing := int(w) - utf8.RuneCountInString(s)
		if missing <= 0 {
			return sv(s), nil
		}
		p := strings.Repeat(pad, missing/utf8.RuneCountInString(pad)+1)
		p = runeSlice(p, 0, missing)
		if left {
			return sv(p + s), nil
		}
		return sv(s + p), nil
	}
}

func repeat(a, b record.Value) (record.Value, error) {
	s, err := str("repeat", a)
	if err != nil {
		return record.Value{}, err
	}
	n, err := integer("repeat", "n", b)
	if err != nil {
		return record.Value{}, err
	}
	if n < 0 {
		return record.Value{}, fnError("repeat", "n must be 0 or more, not %d", n)
	}
	if len(s) > 0 && n > int64(maxBuilt/len(s)) {
		return record.Value{}, fnError("repeat", "%d times %d bytes is over 16 MiB", n, len(s))
	}
	return sv(strings.Repeat(s, int(n))), nil
}

func split(a, b, c record.Value) (record.Value, error) {
	s, err := str("split", a)
	if err != nil {
		return record.Value{}, err
	}
	sep, err := str("split", b)
	if err != nil {
		return record.Value{}, err
	}
	n, err := optInt("split", "n", c, -1)
	if err != nil {
		return record.Value{}, err
	}
	if s == "" {
		return record.ArrayValue(nil), nil
	}
	if sep == "" && !utf8.ValidString(s) {
		return record.Value{}, fnError("split", "the string holds bytes that are not UTF-8, which splitting into characters would replace")
	}
	parts := strings.SplitN(s, sep, int(n))
	out := make([]record.Value, len(parts))
	for i, p := range parts {
		out[i] = sv(p)
	}
	return record.ArrayValue(out), nil
}

func join(a, b record.Value) (record.Value, error) {
	elems, err := array("join", a)
	if err != nil {
		return record.Value{}, err
	}
	sep, err := optStr("join", b, "")
	if err != nil {
		return record.Value{}, err
	}
	var sb strings.Builder
	for i, e := range elems {
		if i > 0 {
			sb.WriteString(sep)
		}
		switch e.Kind() {
		case record.Null:
		case record.Object, record.Array:
			return record.Value{}, fnError("join", "element %d is %s: join takes strings, numbers and bools (map(xs, to_json(#)) first)", i, typeName(e))
		default:
			t, err := toStringFn(e)
			if err != nil {
				return t, err
			}
			sb.WriteString(t.Text())
		}
	}
	return sv(sb.String()), nil
}

func reverse(v record.Value) (record.Value, error) {
	switch v.Kind() {
	case record.String:
		s := v.Text()
		if !utf8.ValidString(s) {
			return record.Value{}, fnError("reverse", "the string holds bytes that are not UTF-8, which reversing by characters would replace")
		}
		r := []rune(s)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return sv(string(r)), nil
	case record.Array:
		elems, _ := array("reverse", v)
		for i, j := 0, len(elems)-1; i < j; i, j = i+1, j-1 {
			elems[i], elems[j] = elems[j], elems[i]
		}
		return record.ArrayValue(elems), nil
	case record.Null:
		return record.Value{}, nullArg("reverse")
	}
	return record.Value{}, fnError("reverse", "%s is %s, not a string or an array", show(v), typeName(v))
}

func titleCase(s string) string {
	prev := ' '
	return strings.Map(func(r rune) rune {
		up := unicode.IsSpace(prev) || prev == '-' || prev == '_'
		prev = r
		if up {
			return unicode.ToTitle(r)
		}
		return r
	}, s)
}

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToTitle(r)) + s[n:]
}

// words splits s into words at spaces, punctuation and case changes:
// "userID HTTPServer" is user, ID, HTTP, Server.
func words(s string) []string {
	var out []string
	rs := []rune(s)
	start := -1
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			if start >= 0 {
				out = append(out, string(rs[start:i]))
			}
			start = -1
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := rs[i-1]
		nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
		if unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev) || unicode.IsUpper(prev) && nextLower) {
			out = append(out, string(rs[start:i]))
			start = i
		}
	}
	if start >= 0 {
		out = append(out, string(rs[start:]))
	}
	return out
}

func joinWords(s, sep string, camel bool) string {
	ws := words(s)
	for i, w := range ws {
		w = strings.ToLower(w)
		if camel && i > 0 {
			w = capitalize(w)
		}
		ws[i] = w
	}
	return strings.Join(ws, sep)
}

// format is printf for values, exact: %f of a number rounds its decimal
// value (not its float64) half away from zero.
func format(args []record.Value) (record.Value, error) {
	layout, err := str("format", args[0])
	if err != nil {
		return record.Value{}, err
	}
	vals := args[1:]
	var b []byte
	next := 0
	for i := 0; i < len(layout); i++ {
		ch := layout[i]
		if ch != '%' {
			b = append(b, ch)
			continue
		}
		j := i + 1
		left, zero := false, false
		for j < len(layout) && (layout[j] == '-' || layout[j] == '0') {
			left, zero = left || layout[j] == '-', zero || layout[j] == '0'
			j++
		}
		width, prec := 0, -1
		for j < len(layout) && layout[j] >= '0' && layout[j] <= '9' {
			width = width*10 + int(layout[j]-'0')
			j++
		}
		if j < len(layout) && layout[j] == '.' {
			prec = 0
			j++
			for j < len(layout) && layout[j] >= '0' && layout[j] <= '9' {
				prec = prec*10 + int(layout[j]-'0')
				j++
			}
		}
		if j >= len(layout) {
			return record.Value{}, fnError("format", "the layout ends inside a verb: %q", layout[i:])
		}
		verb := layout[j]
		i = j
		if verb == '%' {
			b = append(b, '%')
			continue
		}
		if next >= len(vals) {
			return record.Value{}, fnError("format", "%%%c has no argument: %d given", verb, len(vals))
		}
		v := vals[next]
		next++
		var piece string
		switch verb {
		case 's', 'v':
			t, err := toStringFn(v)
			if err != nil {
				return record.Value{}, fnError("format", "%%%c of %s", verb, strings.TrimPrefix(err.Error(), "string: "))
			}
			piece = t.Text()
		case 'q':
			t, err := toStringFn(v)
			if err != nil {
				return t, err
			}
			piece = strconv.Quote(t.Text())
		case 'd':
			n, err := integer("format", "%d's argument", v)
			if err != nil {
				return record.Value{}, err
			}
			piece = strconv.FormatInt(n, 10)
		case 'x', 'X':
			if v.Kind() == record.String {
				piece = fmt.Sprintf("%x", v.Text())
			} else {
				n, err := integer("format", "%x's argument", v)
				if err != nil {
					return record.Value{}, err
				}
				piece = strconv.FormatInt(n, 16)
			}
			if verb == 'X' {
				piece = strings.ToUpper(piece)
			}
		case 'f':
			if !isNumber(v) {
				return record.Value{}, fnError("format", "%%f of %s, which is not a number", show(v))
			}
			if prec < 0 {
				prec = 6
			}
			r, err := roundPlaces("format", v, prec)
			if err != nil {
				return r, err
			}
			piece = fixed(r.Literal(), prec)
		default:
			return record.Value{}, fnError("format", "unknown verb %%%c: use %%s, %%d, %%f, %%x, %%q or %%v", verb)
		}
		if pad := width - utf8.RuneCountInString(piece); pad > 0 {
			switch {
			case left:
				piece += strings.Repeat(" ", pad)
			case zero && verb != 's' && verb != 'q':
				sign := ""
				if strings.HasPrefix(piece, "-") {
					sign, piece = "-", piece[1:]
				}
				piece = sign + strings.Repeat("0", pad) + piece
			default:
				piece = strings.Repeat(" ", pad) + piece
			}
		}
		b = append(b, piece...)
	}
	if next < len(vals) {
		return record.Value{}, fnError("format", "%d arguments but %d verbs", len(vals), next)
	}
	return sv(string(b)), nil
}

// fixed writes the decimal literal lit with exactly prec places.
func fixed(lit string, prec int) string {
	intPart, frac, _ := strings.Cut(lit, ".")
	if prec == 0 {
		return intPart
	}
	if len(frac) < prec {
		frac += strings.Repeat("0", prec-len(frac))
	}
	return intPart + "." + frac[:prec]
}
