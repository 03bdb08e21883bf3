package lang

import (
	"encoding/csv"
	"errors"
	"net/url"
	"sort"
	"strings"

	"github.com/weir-etl/weir/record"
)

func init() {
	register(
		&Func{Name: "try", Category: "control", Params: []Param{{Name: "x", Type: TAny}, {Name: "fallback", Type: TAny, Optional: true}}, Result: TAny,
			Doc: "x, or fallback (null by default) when x is a record error: try(int(qty), 0). A load error in x stays one; drop() is not caught.", Example: `try(int("x"), -1)`, Output: `-1`,
			build: func(c *compiler, x *callExpr, args []compiled) (compiled, *Error) {
				a := args[0].eval
				var b node
				typ := args[0].typ | TNull
				if len(args) > 1 {
					b, typ = args[1].eval, args[0].typ|args[1].typ
				}
				return compiled{eval: func(f *frame) (record.Value, error) {
					v, err := a(f)
					if err == nil || err == ErrDrop {
						return v, err
					}
					if b == nil {
						return record.Value{}, nil
					}
					return b(f)
				}, typ: typ, pure: args[0].pure && (len(args) < 2 || args[1].pure)}, nil
			}},
		&Func{Name: "error", Category: "control", Params: []Param{{Name: "message", Type: TString}}, Result: TAny, Impure: true,
			Doc: "Makes a record error with message: the record is rejected and the sink's failure policy decides (dead letter, rewind, halt).", Example: `try(error("bad"), "caught")`, Output: `"caught"`,
			fn1: func(v record.Value) (record.Value, error) {
				s, err := str("error", v)
				if err != nil {
					return record.Value{}, err
				}
				return record.Value{}, &EvalError{Func: "error", Msg: strings.Clone(s)}
			}},
		&Func{Name: "drop", Category: "control", Result: TAny, Impure: true,
			Doc: "Drops the record, in a map or flat_map (its position is committed, as for a filter): set: {x: 'bad ? drop() : x'}.", Example: `drop()`, Output: `dropped`,
			fnN: func([]record.Value) (record.Value, error) { return record.Value{}, ErrDrop }},
		&Func{Name: "coalesce", Category: "control", Params: []Param{{Name: "x", Type: TAny, Variadic: true}}, Result: TAny,
			Doc: "The first argument that is not null (a ?? b ?? c).", Example: `coalesce(null, "", "x")`, Output: `""`,
			fnN: func(args []record.Value) (record.Value, error) {
				for _, a := range args {
					if !a.IsNull() {
						return a, nil
					}
				}
				return record.Value{}, nil
			}},
	)
	register(
		&Func{Name: "parse_json", Category: "parsing", Params: []Param{{Name: "s", Type: TString | TNull}}, Result: TAny, Aliases: []string{"fromJSON"},
			Doc: "The JSON value s holds, exactly (numbers keep their literal).", Example: `parse_json("{\"a\": [1, 2.50]}").a`, Output: `[1, 2.50]`,
			fn1: func(v record.Value) (record.Value, error) {
				s, err := str("parse_json", v)
				if err != nil {
					return record.Value{}, err
				}
				p, perr := record.ParseValue([]byte(s))
				if perr != nil {
					return record.Value{}, fnError("parse_json", "%q is not JSON: %v", truncateText(s), perr)
				}
				return p, nil
			}},
		&Func{Name: "to_json", Category: "parsing", Params: []Param{{Name: "x", Type: TAny}}, Result: TString, Aliases: []string{"toJSON"},
			Doc: "x as compact JSON, exactly (numbers as their literals).", Example: `to_json({a: [1, "b"]})`, Output: `"{\"a\":[1,\"b\"]}"`,
			fn1: func(v record.Value) (record.Value, error) { return sv(string(v.AppendJSON(nil))), nil }},
		&Func{Name: "parse_csv", Category: "parsing", Params: []Param{{Name: "s", Type: TString | TNull}, {Name: "delimiter", Type: TString, Optional: true, Const: true}}, Result: TArray,
			Doc: "The fields of one CSV line (RFC 4180 quoting), as strings; the delimiter is , by default.", Example: `parse_csv("a,\"b,c\",d")`, Output: `["a", "b,c", "d"]`,
			fn2: func(a, b record.Value) (record.Value, error) {
				s, err := str("parse_csv", a)
				if err != nil {
					return record.Value{}, err
				}
				d, err := optStr("parse_csv", b, ",")
				if err != nil {
					return record.Value{}, err
				}
				if len([]rune(d)) != 1 {
					return record.Value{}, fnError("parse_csv", "the delimiter must be one character, not %q", d)
				}
				r := csv.NewReader(strings.NewReader(s))
				r.Comma, r.FieldsPerRecord, r.LazyQuotes = []rune(d)[0], -1, false
				fields, perr := r.Read()
				if perr != nil {
					var pe *csv.ParseError
					if errors.As(perr, &pe) {
						perr = pe.Err
					}
					if perr.Error() == "EOF" {
						return record.ArrayValue(nil), nil
					}
					return record.Value{}, fnError("parse_csv", "%q: %v", truncateText(s), perr)
				}
				if _, more := r.Read(); more == nil {
					return record.Value{}, fnError("parse_csv", "%q holds more than one line", truncateText(s))
				}
				out := make([]record.Value, len(fields))
				for i, f := range fields {
					out[i] = sv(f)
				}
				return record.ArrayValue(out), nil
			}},
		&Func{Name: "parse_url", Category: "parsing", Params: []Param{{Name: "s", Type: TString | TNull}}, Result: TObject,
			Doc:     "A URL's parts: scheme, user, host, port (a string, \"\" when none), path, query (as parse_query gives it), fragment.",
			Example: `parse_url("https://ann@example.org:8443/a/b?x=1&x=2&y=#top").port`, Output: `"8443"`,
			fn1: func(v record.Value) (record.Value, error) {
				s, err := str("parse_url", v)
				if err != nil {
					return record.Value{}, err
				}
				u, perr := url.Parse(s)
				if perr != nil {
					return record.Value{}, fnError("parse_url", "%q is not a URL: %v", truncateText(s), errors.Unwrap(perr))
				}
				o := record.NewObj()
				o.Set("scheme", sv(u.Scheme))
				o.Set("user", sv(u.User.Username()))
				o.Set("host", sv(u.Hostname()))
				o.Set("port", sv(u.Port()))
				o.Set("path", sv(u.Path))
				q, qerr := url.ParseQuery(u.RawQuery)
				if qerr != nil {
					return record.Value{}, fnError("parse_url", "the query of %q: %v", truncateText(s), qerr)
				}
				o.Set("query", queryObject(q))
				o.Set("fragment", sv(u.Fragment))
				return record.ObjectValue(o), nil
			}},
		&Func{Name: "parse_query", Category: "parsing", Params: []Param{{Name: "s", Type: TString | TNull}}, Result: TObject,
			Doc: "A query string's parameters, by name (sorted): a string, or an array of strings for a name given more than once.", Example: `parse_query("b=2&a=1&a=x%20y")`, Output: `{"a": ["1", "x y"], "b": "2"}`,
			fn1: func(v record.Value) (record.Value, error) {
				s, err := str("parse_query", v)
				if err != nil {
					return record.Value{}, err
				}
				q, perr := url.ParseQuery(strings.TrimPrefix(s, "?"))
				if perr != nil {
					return record.Value{}, fnError("parse_query", "%q: %v", truncateText(s), perr)
				}
				return queryObject(q), nil
			}},
		&Func{Name: "parse_kv", Category: "parsing", Params: []Param{{Name: "s", Type: TString | TNull}, {Name: "separator", Type: TString, Optional: true}, {Name: "assign", Type: TString, Optional: true}}, Result: TObject,
			Doc:     "key=value pairs, separated by white space (or separator), as an object of strings in order; a value may be quoted with \". A later key replaces an earlier one.",
			Example: `parse_kv("level=info msg=\"disk full\" code=28")`, Output: `{"level": "info", "msg": "disk full", "code": "28"}`, fn3: parseKV},
	)
}

func queryObject(q url.Values) record.Value {
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	sort.Strings(names)
	o := record.NewObj()
	for _, k := range names {
		vs := q[k]
		if len(vs) == 1 {
			o.Set(k, sv(vs[0]))
			continue
		}
		arr := make([]record.Value, len(vs))
		for i, x := range vs {
			arr[i] = sv(x)
		}
		o.Set(k, record.ArrayValue(arr))
	}
	return record.ObjectValue(o)
}

func parseKV(a, b, c record.Value) (record.Value, error) {
	s, err := str("parse_kv", a)
	if err != nil {
		return record.Value{}, err
	}
	sep, err := optStr("parse_kv", b, "")
	if err != nil {
		return record.Value{}, err
	}
	assign, err := optStr("parse_kv", c, "=")
	if err != nil {
		return record.Value{}, err
	}
	if assign == "" {
		return record.Value{}, fnError("parse_kv", "the assign string is empty")
	}
	o := record.NewObj()
	i := 0
	skipSep := func() {
		for i < len(s) {
			switch {
			case sep == "" && (s[i] == ' ' || s[i] == '\t'):
				i++
			case sep != "" && strings.HasPrefix(s[i:], sep):
				i += len(sep)
			case sep != "" && s[i] == ' ':
				i++
			default:
				return
			}
		}
	}
	for skipSep(); i < len(s); skipSep() {
		j := strings.Index(s[i:], assign)
		if j <= 0 {
			return record.Value{}, fnError("parse_kv", "%q: %q has no %s", truncateText(s), truncateText(s[i:]), assign)
		}
		key := strings.TrimSpace(s[i : i+j])
		i += j + len(assign)
		var val string
		if i < len(s) && s[i] == '"' {
			k := i + 1
			var b strings.Builder
			for k < len(s) && s[k] != '"' {
				if s[k] == '\\' && k+1 < len(s) {
					k++
				}
				b.WriteByte(s[k])
				k++
			}
			if k >= len(s) {
				return record.Value{}, fnError("parse_kv", "%q: a quote is not closed", truncateText(s))
			}
			val, i = b.String(), k+1
		} else {
			k := i
			for k < len(s) && !(sep == "" && (s[k] == ' ' || s[k] == '\t')) && !(sep != "" && strings.HasPrefix(s[k:], sep)) {
				k++
			}
			val, i = s[i:k], k
		}
		o.Set(key, sv(val))
	}
	return record.ObjectValue(o), nil
}
