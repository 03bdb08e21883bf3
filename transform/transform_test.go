package transform

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/lang"
	"github.com/weir-etl/weir/record"
)

// rec returns a record holding the JSON value js.
func rec(js string) *record.Record {
	r := record.New([]byte(js))
	return &r
}

// fieldsOf returns the JSON object a record's value encodes, as a sink would see it.
func fieldsOf(t *testing.T, r *record.Record) map[string]any {
	t.Helper()
	b, err := r.Value()
	if err != nil {
		t.Fatalf("Value: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("value %s: %v", b, err)
	}
	return m
}

func jsonMap(t *testing.T, js string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func mustFilter(t *testing.T, cond string) *Filter {
	t.Helper()
	f, err := NewFilter(cond)
	if err != nil {
		t.Fatalf("NewFilter(%q): %v", cond, err)
	}
	return f
}

func TestFilterKeepsOnlyMatching(t *testing.T) {
	cases := []struct {
		cond, value string
		keep        bool
	}{
		{`id % 2 == 0`, `{"id":4}`, true},
		{`id % 2 == 0`, `{"id":3}`, false},
		{`user.age > 30`, `{"user":{"age":31}}`, true},
		{`user.age > 30`, `{"user":{"age":30}}`, false},
		{`name startsWith "a" && len(tags) == 2`, `{"name":"ann","tags":[1,2]}`, true},
		{`(missing?.age ?? 0) > 3`, `{}`, false},
		{`price * qty >= 100`, `{"price":12.5,"qty":8}`, true},
		{`"b" in tags`, `{"tags":["a","b"]}`, true},
	}
	for _, c := range cases {
		f := mustFilter(t, c.cond)
		out, err := f.Process(rec(c.value), nil)
		if err != nil {
			t.Fatalf("%s on %s: %v", c.cond, c.value, err)
		}
		if got := len(out) == 1; got != c.keep {
			t.Errorf("%s on %s: kept=%v, want %v", c.cond, c.value, got, c.keep)
		}
	}
}

func TestFilterOnMetadataDoesNotDecode(t *testing.T) {
	// A filter on key alone must not pay for decoding the value; the value
	// here is not even JSON, so decoding would fail the record.
	f := mustFilter(t, `@key == "k1"`)
	in := rec(`not json`)
	in.Key = []byte("k1")
	out, err := f.Process(in, nil)
	if err != nil || len(out) != 1 {
		t.Fatalf("out=%d err=%v", len(out), err)
	}
	if in.JSONChecked() {
		t.Fatal("filter on key read the value")
	}
	if _, err := mustFilter(t, `id == 1`).Process(rec(`{"id":1}`), nil); err != nil {
		t.Fatal(err)
	}
}

func TestReservedNames(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	in := func() *record.Record {
		r := rec(`{"id":1,"key":"field-key"}`)
		r.Key = []byte("k")
		r.Headers = []record.Header{{Key: "h", Value: []byte("hv")}}
		r.Meta = []record.Meta{{Key: "topic", Value: "orders"}}
		r.Time = ts
		r.Origin = record.Origin{Source: "in", Partition: "orders/3", Offset: 42}
		return r
	}
	for _, cond := range []string{
		`@key == "k" && key == "field-key"`, // metadata under @; the field is the field
		`@headers.h == "hv"`,
		`@headers["h"] == "hv" && @headers.absent == ""`,
		`@meta.topic == "orders"`,
		`year(@timestamp) == 2026`,
		`@timestamp < now()`,
		`@origin.source == "in" && @origin.partition == "orders/3" && @origin.offset == 42`,
		`id == 1 && @key == "k" && @origin.offset > 40`,
	} {
		out, err := mustFilter(t, cond).Process(in(), nil)
		if err != nil || len(out) != 1 {
			t.Errorf("%s: kept %d, err %v", cond, len(out), err)
		}
	}
}

func TestFilterRecordErrors(t *testing.T) {
	cases := []struct{ cond, value, want string }{
		{`id`, `{"id":3}`, `gave int 3, not a bool`},
		{`flag`, `{}`, `gave null, not a bool`},
		{`id > 1`, `not json`, `not JSON`},
		{`id > 1`, `[1,2]`, `not a JSON object`},
		{`user.age > 1`, `{"user":"x"}`, `expression "user.age > 1"`},
		{`id % 0 == 1`, `{"id":3}`, `modulo by zero`},
	}
	for _, c := range cases {
		out, err := mustFilter(t, c.cond).Process(rec(c.value), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "transform: ") {
			t.Errorf("%s on %s: err %v, want one containing %q", c.cond, c.value, err, c.want)
		}
		if len(out) != 0 {
			t.Errorf("%s on %s: a failed record was passed on", c.cond, c.value)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	cases := []struct{ cond, want string }{
		{``, `is empty`},
		{`id == 1 &&`, `unexpected end of the expression; expected a value (line 1, column 11`},
		{`1 + 2`, `it gives int, but a condition must give a bool`},
		{`@key + 1`, `mismatched types string and int`},
		{`@origin.ofset == 1`, `ofset`},
		{`frobnicate(id)`, `unknown function frobnicate`},
		{`$env.id == 1`, `$env is not supported`},
		{"id == 1 &&\n  )", `line 2`},
	}
	for _, c := range cases {
		_, err := NewFilter(c.cond)
		var xe *ExprError
		if !errors.As(err, &xe) {
			t.Errorf("%q: err %v, want an *ExprError", c.cond, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "filter condition") {
			t.Errorf("%q: %v\nwant it to contain %q", c.cond, err, c.want)
		}
	}
}

// Guarantee: each let variable reads its own value, wherever the
// declarations are: two lets in sibling subexpressions (whose scopes end
// before the other begins) do not share a value, nor does a let declared
// inside a predicate with one outside it.
func TestLetVariablesKeepTheirOwnValues(t *testing.T) {
	cases := []struct{ src, want string }{
		{`let a = 1; let b = 2; a + b`, `3`},
		{`(let a = 1; a) + (let b = 2; b)`, `3`},
		{`(let a = 1; a) + (let b = 2; let c = 10; b + c)`, `13`},
		{`let a = 1; (let b = 2; b) + (let c = 3; c) + a`, `6`},
		{`let a = 5; map([1, 2], let b = # * 10; b + a)`, `[15,25]`},
		{`(let a = "x"; a) + (let a = "y"; a)`, `"xy"`},
	}
	for _, c := range cases {
		got, err := evalOn(t, c.src, `{}`)
		if err != nil || got != c.want {
			t.Errorf("%s = %s (%v), want %s", c.src, got, err, c.want)
		}
	}
}

func TestModulo(t *testing.T) {
	cases := []struct {
		src  string
		want string
	}{
		{`7 % 3`, `1`},
		{`x % 3`, `1`},   // x is 7.0: whole numbers take part as integers
		{`y % 2`, `1.5`}, // y is 5.5
		{`x % 2.5`, `2`},
		{`-7 % 3`, `-1`},
		{`big % 1000`, `807`},
	}
	for _, c := range cases {
		got, err := evalOn(t, c.src, `{"x":7.0,"y":5.5,"big":9223372036854775807}`)
		if err != nil || got != c.want {
			t.Errorf("%s = %s, %v; want %s", c.src, got, err, c.want)
		}
	}
}

// evalOn evaluates src as a map's set expression on a record holding value,
// and returns the result as JSON.
func evalOn(t *testing.T, src, value string) (string, error) {
	t.Helper()
	x, err := Compile("test", src)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	e := getEnv()
	defer putEnv(e)
	r := rec(value)
	if err := r.Index(&e.obj); err != nil {
		return "", err
	}
	v, err := evalObj(e, x, r)
	if err != nil {
		return "", err
	}
	return string(v.AppendJSON(nil)), nil
}

func TestMap(t *testing.T) {
	m, err := NewMap(MapConfig{
		Set: []Assignment{
			{"total", "price * qty"},
			{"user.address.city", `upper(city)`},
			{"double", "total * 2"}, // sees the total set above
			{"copy", "user"},
			{"copy.extra", "true"}, // changes copy, not user
			{"src", "@origin.source"},
		},
		Rename: []Rename{{"name", "user.name"}, {"absent", "other"}},
		Delete: []string{"city", "price", "nothere", "user.address.none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	in := rec(`{"name":"ann","price":2,"qty":3,"city":"oslo"}`)
	in.Origin.Source = "in"
	out, err := m.Process(in, nil)
	if err != nil || len(out) != 1 {
		t.Fatalf("out=%d err=%v", len(out), err)
	}
	got := fieldsOf(t, &out[0])
	want := jsonMap(t, `{"qty":3,"total":6,"double":12,
		"user":{"name":"ann","address":{"city":"OSLO"}},
		"copy":{"address":{"city":"OSLO"},"extra":true},
		"src":"in"}`)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
	if hasRef(&out[0]) {
		t.Fatal("map output carries a reference")
	}
}

func TestMapOrderIsSetRenameDelete(t *testing.T) {
	// set reads a field that rename moves and delete removes: it must still
	// see it, because set runs first.
	m, err := NewMap(MapConfig{
		Set:    []Assignment{{"b", "a + 1"}},
		Rename: []Rename{{"a", "c"}},
		Delete: []string{"c"},
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Process(rec(`{"a":1}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fieldsOf(t, &out[0]); !reflect.DeepEqual(got, map[string]any{"b": 2.0}) {
		t.Fatalf("got %v", got)
	}
}

// Guarantee: each set reads the fields as the sets before it left them,
// however often a field was read before: a field set anew, a nested field
// set under it, and a field replaced by a value of another type.
func TestMapSetsSeeEarlierSets(t *testing.T) {
	m, err := NewMap(MapConfig{Set: []Assignment{
		{"a", "id + 0"}, {"id", "5"}, {"b", "id + 1"},
		{"c", "user.age"}, {"user.age", "id * 2"}, {"d", "user.age + id"},
		{"user", `"u" + string(id + 0)`}, {"e", "user + string(id * 3)"},
		{"f", "id + id"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Process(rec(`{"id":1,"user":{"age":7}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":5,"user":"u5","a":1,"b":6,"c":7,"d":15,"e":"u515","f":10}`
	if got := string(out[0].Bytes()); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestMapErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  MapConfig
		want string
	}{
		{MapConfig{}, "nothing to do"},
		{MapConfig{Set: []Assignment{{"a..b", "1"}}}, "empty segment"},
		{MapConfig{Set: []Assignment{{"a", "1 +"}}}, `map set "a": expression "1 +" does not compile`},
		{MapConfig{Rename: []Rename{{"a", "c"}, {"b", "c"}}}, `renames both "a" and "b" to "c"`},
		{MapConfig{Delete: []string{""}}, "empty field name"},
	} {
		if _, err := NewMap(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.cfg, err, c.want)
		}
	}
	m, err := NewMap(MapConfig{Set: []Assignment{{"user.name", `"x"`}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Process(rec(`{"user":"bob"}`), nil); err == nil || !strings.Contains(err.Error(), "user is a string, not an object") {
		t.Fatalf("setting through a string: err %v", err)
	}
	if _, err := m.Process(rec(`"str"`), nil); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Fatalf("non-object record: err %v", err)
	}
}

func TestFlatMap(t *testing.T) {
	cases := []struct {
		cfg   FlatMapConfig
		value string
		want  []string
	}{
		// Objects become the records' fields.
		{FlatMapConfig{Explode: "items"}, `{"id":1,"items":[{"sku":"a"},{"sku":"b"}]}`,
			[]string{`{"sku":"a"}`, `{"sku":"b"}`}},
		// Scalars replace the exploded field by default.
		{FlatMapConfig{Explode: "tags"}, `{"id":1,"tags":["x","y"]}`,
			[]string{`{"id":1,"tags":"x"}`, `{"id":1,"tags":"y"}`}},
		{FlatMapConfig{Explode: "order.tags", As: "tag"}, `{"order":{"tags":[1,2]}}`,
			[]string{`{"order":{"tags":[1,2]},"tag":1}`, `{"order":{"tags":[1,2]},"tag":2}`}},
		// An expression that is not a field path stores under "value".
		{FlatMapConfig{Explode: `split(s, ",")`}, `{"s":"p,q"}`,
			[]string{`{"s":"p,q","value":"p"}`, `{"s":"p,q","value":"q"}`}},
		{FlatMapConfig{Explode: `1..2`, As: "n"}, `{}`, []string{`{"n":1}`, `{"n":2}`}},
		// Zero elements, or none at all, drop the record.
		{FlatMapConfig{Explode: "items"}, `{"items":[]}`, nil},
		{FlatMapConfig{Explode: "items"}, `{}`, nil},
	}
	for _, c := range cases {
		f, err := NewFlatMap(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		in := rec(c.value)
		in.Key = []byte("k")
		in.Origin.Offset = 9
		out, err := f.Process(in, nil)
		if err != nil {
			t.Fatalf("%+v on %s: %v", c.cfg, c.value, err)
		}
		if len(out) != len(c.want) {
			t.Fatalf("%+v on %s: %d outputs, want %d", c.cfg, c.value, len(out), len(c.want))
		}
		for i := range out {
			if got, want := fieldsOf(t, &out[i]), jsonMap(t, c.want[i]); !reflect.DeepEqual(got, want) {
				t.Errorf("%+v on %s: output %d = %v, want %v", c.cfg, c.value, i, got, want)
			}
			if string(out[i].Key) != "k" || out[i].Origin.Offset != 9 || hasRef(&out[i]) {
				t.Errorf("output %d lost its parent's metadata or carries a reference: %+v", i, out[i])
			}
		}
	}
}

func TestFlatMapOutputsShareNothing(t *testing.T) {
	// Two outputs from one parent must be independent: a later map on one
	// must not change the other (or the parent).
	f, err := NewFlatMap(FlatMapConfig{Explode: "tags", As: "tag"})
	if err != nil {
		t.Fatal(err)
	}
	in := rec(`{"user":{"n":1},"tags":["a","b"]}`)
	out, err := f.Process(in, nil)
	if err != nil || len(out) != 2 {
		t.Fatalf("out=%d err=%v", len(out), err)
	}
	m, _ := NewMap(MapConfig{Set: []Assignment{{"user.n", "99"}}})
	if _, err := m.Process(&out[0], nil); err != nil {
		t.Fatal(err)
	}
	if got := fieldsOf(t, &out[1])["user"]; !reflect.DeepEqual(got, map[string]any{"n": 1.0}) {
		t.Fatalf("changing output 0 changed output 1: %v", got)
	}
	if pf := fieldsOf(t, in); !reflect.DeepEqual(pf["user"], map[string]any{"n": 1.0}) {
		t.Fatalf("changing output 0 changed the parent: %v", pf["user"])
	}
}

func TestFlatMapErrors(t *testing.T) {
	if _, err := NewFlatMap(FlatMapConfig{Explode: "items ++"}); err == nil || !strings.Contains(err.Error(), "flat_map explode") {
		t.Fatalf("bad expression: err %v", err)
	}
	if _, err := NewFlatMap(FlatMapConfig{Explode: "items", As: "a."}); err == nil {
		t.Fatal("bad as accepted")
	}
	f, err := NewFlatMap(FlatMapConfig{Explode: "items"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Process(rec(`{"items":"nope"}`), nil); err == nil || !strings.Contains(err.Error(), "gave a string, not an array") {
		t.Fatalf("non-array: err %v", err)
	}
	g, _ := NewFlatMap(FlatMapConfig{Explode: "items", As: "id.x"})
	if _, err := g.Process(rec(`{"id":1,"items":[1]}`), nil); err == nil || !strings.Contains(err.Error(), "id is a number") {
		t.Fatalf("as through a number: err %v", err)
	}
}

func TestRoute(t *testing.T) {
	r, err := NewRoute([]RouteOutput{
		{"big", "amount > 100"},
		{"eu", `region == "eu"`},
		{"all", "true"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Outputs(); !reflect.DeepEqual(got, []string{"big", "eu", "all"}) {
		t.Fatalf("Outputs = %v", got)
	}
	cases := []struct {
		value string
		want  []int
	}{
		{`{"amount":500,"region":"eu"}`, []int{0, 1, 2}},
		{`{"amount":5,"region":"eu"}`, []int{1, 2}},
		{`{"amount":5,"region":"us"}`, []int{2}},
	}
	for _, c := range cases {
		got, err := r.Route(rec(c.value), []int{7})
		if err != nil {
			t.Fatal(err)
		}
		if want := append([]int{7}, c.want...); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", c.value, got, want)
		}
	}
	none, _ := NewRoute([]RouteOutput{{"x", "false"}})
	if got, err := none.Route(rec(`{}`), nil); err != nil || len(got) != 0 {
		t.Fatalf("matching none: %v %v", got, err)
	}
}

func TestRouteErrors(t *testing.T) {
	for _, c := range []struct {
		outs []RouteOutput
		want string
	}{
		{nil, "no outputs"},
		{[]RouteOutput{{"a", "true"}, {"a", "false"}}, `"a" is defined twice`},
		{[]RouteOutput{{"a.b", "true"}}, "contains a dot"},
		{[]RouteOutput{{"", "true"}}, "name is empty"},
		{[]RouteOutput{{"a", "x >"}}, `route output "a": expression "x >" does not compile`},
	} {
		if _, err := NewRoute(c.outs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.outs, err, c.want)
		}
	}
	// A record that cannot be decided for one output goes to none: routing is
	// all or nothing.
	r, _ := NewRoute([]RouteOutput{{"a", "true"}, {"b", "n"}})
	got, err := r.Route(rec(`{"n":"str"}`), []int{5})
	if err == nil || !strings.Contains(err.Error(), `route output "b"`) || !reflect.DeepEqual(got, []int{5}) {
		t.Fatalf("got %v, err %v", got, err)
	}
}

func TestConcurrentUse(t *testing.T) {
	// Transforms are shared by the runtime's workers; run with -race.
	f := mustFilter(t, `id % 2 == 0 && key != ""`)
	m, _ := NewMap(MapConfig{Set: []Assignment{{"k", "key"}, {"d", "id * 2"}}})
	r, _ := NewRoute([]RouteOutput{{"even", "id % 2 == 0"}, {"odd", "id % 2 == 1"}})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				id := g*1000 + i
				mk := func() *record.Record {
					b, _ := json.Marshal(map[string]any{"id": id})
					x := record.New(b)
					x.Key = []byte("k")
					return &x
				}
				out, err := f.Process(mk(), nil)
				if err != nil || (len(out) == 1) != (id%2 == 0) {
					t.Errorf("filter id %d: %d %v", id, len(out), err)
					return
				}
				out, err = m.Process(mk(), nil)
				if err != nil || fieldsOf(t, &out[0])["d"] != float64(2*id) {
					t.Errorf("map id %d: %v", id, err)
					return
				}
				idx, err := r.Route(mk(), nil)
				if err != nil || len(idx) != 1 || idx[0] != id%2 {
					t.Errorf("route id %d: %v %v", id, idx, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// Guarantee: a condition reads only the fields it names, and passes the
// record on as it was: a string that encoding/json would turn into a
// replacement character, and a big number, are still there byte for byte.
func TestFilterPassesBytesThrough(t *testing.T) {
	v := `{"blob":{"a":[1,2,{"b":"` + strings.Repeat("x", 500) + `"}]},"id":4,"s":"\ud800","n":12345678901234567891}`
	in := rec(v)
	out, err := mustFilter(t, `id % 2 == 0`).Process(in, nil)
	if err != nil || len(out) != 1 {
		t.Fatalf("out=%d err=%v", len(out), err)
	}
	if b, _ := out[0].Value(); string(b) != v {
		t.Fatalf("the filter changed the value:\n%s\n%s", b, v)
	}
}

// Guarantee: only names decide whether the value is decoded; the function
// that % becomes is not a field. A condition on metadata with % passes a
// value that is not JSON at all.
func TestModuloOnMetadataDoesNotDecode(t *testing.T) {
	for _, cond := range []string{`@origin.offset % 2 == 0`, `len(@key) % 2 == 1`} {
		f := mustFilter(t, cond)
		if f.cond.p.Needs()&lang.NeedFields != 0 || len(f.cond.p.Fields()) != 0 {
			t.Errorf("%s: needs fields %v", cond, f.cond.p.Fields())
		}
		in := rec(`not json`)
		in.Key = []byte("k")
		in.Origin.Offset = 8
		out, err := f.Process(in, nil)
		if err != nil || len(out) != 1 || in.JSONChecked() {
			t.Errorf("%s: kept %d, err %v, read the value %v", cond, len(out), err, in.JSONChecked())
		}
	}
	x, err := CompileCondition("test", `id % 2 == 0 && user.age > n && @key != ""`)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"id", "n", "user"}; !reflect.DeepEqual(x.p.Fields(), want) {
		t.Errorf("fields %v, want %v", x.p.Fields(), want)
	}
}

// Guarantee: % keeps its documented behaviour on numbers read by the lookup
// path: whole JSON numbers (1e3, -0, 4.0) are integers, others floats, and
// integers are exact (9007199254740993 is odd, as written).
func TestModuloOnLookedUpNumbers(t *testing.T) {
	cases := []struct {
		value, cond string
	}{
		{`{"id":4}`, `id % 2 == 0`},
		{`{"id":1e3}`, `id % 7 == 6`},
		{`{"id":4.0}`, `id % 3 == 1`},
		{`{"id":-0}`, `id % 2 == 0`},
		{`{"id":-7}`, `id % 3 == -1`},
		{`{"id":5.5}`, `id % 2 == 1.5`},
		{`{"id":9007199254740993}`, `id % 2 == 1`}, // a float64 would round it to 2^53
		{`{"id":9223372036854775807}`, `id % 10 == 7`},
		{`{"id":12345678901234567890}`, `string(id) == "12345678901234567890" && id > 9223372036854775807 && id == 12345678901234567890.0 && id != 12345678901234567891`},
		{`{"id":7}`, `string(id % 3) == "1"`}, // an int, not 1.0
	}
	for _, c := range cases {
		out, err := mustFilter(t, c.cond).Process(rec(c.value), nil)
		if err != nil || len(out) != 1 {
			t.Errorf("%s on %s: kept %d, err %v", c.cond, c.value, len(out), err)
		}
	}
}

// lookupConditions run against lookupValues, each on a fresh record (the
// lookup path) and on a decoded one (the full decoding the lookup replaces).
var lookupConditions = []string{
	`id % 2 == 0`,
	`id == 1000`,
	`name == "x\"y\\z/é😀"`,
	`name == "\ufffd"`,
	`user.age > 30 && user.tags[1] == "b"`,
	`user?.name ?? "none"`,
	`len(items) == 2 && items[1].k == true`,
	`id == -0 && string(id) == "0"`,
	`big > 1e19`,
	`"id" in user`,
	`type(id)`,
	`toJSON(user)`,
	`id` + " > 0 ? name : \"\"",
}

var lookupValues = []string{
	`{"id":4,"name":"a"}`,
	`{"id":1e3,"name":"x\"y\\z\/\u00e9\ud83d\ude00"}`,
	"{\"id\":3,\"name\":\"\xff\"}",
	`{"name":"\ud800","id":-0}`,
	`{"id":1,"id":2,"user":{"age":31,"tags":["a","b"],"age":29}}`,
	`{"user":{"name":null,"age":40,"tags":["x","b"]},"items":[{},{"k":true}]}`,
	`{"big":12345678901234567890,"id":0.5}`,
	` { "id" : 7 , "user" : { "id" : 1 } } `,
	`{"id":2,"other":1e400}`,
	`{"id":2,"other":[1,2,]}`,
	`{"id":2}trailing`,
	`[{"id":2}]`,
	`{"\u0069d":8}`,
	`{}`,
}

// Guarantee: a condition gives the same result (or the same error) whether
// it reads fields through the lookup path (filter, route) or from the
// indexed object (map, flat_map).
func TestConditionsSameOnLookupAndObject(t *testing.T) {
	for _, cond := range lookupConditions {
		x, err := Compile("test", cond)
		if err != nil {
			t.Fatalf("%s: %v", cond, err)
		}
		for _, v := range lookupValues {
			e := getEnv()
			gotLookup, errLookup := evalLookup(e, x, rec(v))
			var gotObj string
			r := rec(v)
			errObj := r.Index(&e.obj)
			if errObj == nil {
				var res record.Value
				if res, errObj = evalObj(e, x, r); errObj == nil {
					gotObj = string(res.AppendJSON(nil))
				}
			} else {
				errObj = fmt.Errorf("transform: %w", errObj)
			}
			putEnv(e)
			if fmt.Sprint(errLookup) != fmt.Sprint(errObj) || gotLookup != gotObj {
				t.Errorf("%s on %s:\nlookup %s, %v\nobject %s, %v", cond, v, gotLookup, errLookup, gotObj, errObj)
			}
		}
	}
}

// evalLookup evaluates x as decide does, returning its result as JSON.
func evalLookup(e *env, x *Expr, r *record.Record) (string, error) {
	fields := x.p.Fields()
	vals := make([]record.Value, len(fields))
	found := make([]bool, len(fields))
	if err := r.Lookup(fields, vals, found); err != nil {
		return "", fmt.Errorf("transform: %w", err)
	}
	e.lang.BindLookup(r, fields, vals, found)
	v, err := e.eval(x)
	if err != nil {
		return "", err
	}
	return string(v.AppendJSON(nil)), nil
}

// Guarantee: the metadata values an env keeps from one record to the next
// (key, headers, meta, timestamp, origin) are always the current record's.
func TestEnvReusesNothingStale(t *testing.T) {
	f := mustFilter(t, `@key == want.key && toJSON(@headers) == toJSON(want.headers) && toJSON(@meta) == toJSON(want.meta) && @origin.offset == want.offset && string(@timestamp) == want.ts`)
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	recs := []struct {
		key     string
		headers []record.Header
		meta    []record.Meta
		offset  int64
		ts      time.Time
	}{
		{"a", []record.Header{{Key: "t", Value: []byte("x")}, {Key: "u", Value: []byte("1")}}, []record.Meta{{Key: "topic", Value: "o"}}, 1, ts},
		{"a", []record.Header{{Key: "t", Value: []byte("y")}}, nil, 2, ts},
		{"bb", []record.Header{{Key: "t", Value: []byte("y")}, {Key: "t", Value: []byte("z")}}, []record.Meta{{Key: "p", Value: "1"}}, 3, ts.Add(time.Second)},
		{"", nil, nil, 4, time.Time{}},
	}
	e := getEnv() // one env for all, as one goroutine would have
	defer putEnv(e)
	for _, c := range recs {
		in := rec(`{}`)
		in.Key, in.Headers, in.Meta, in.Time = []byte(c.key), c.headers, c.meta, c.ts
		in.Origin.Offset = c.offset
		h := map[string]string{}
		for _, kv := range c.headers {
			h[kv.Key] = string(kv.Value)
		}
		m := map[string]string{}
		for _, kv := range c.meta {
			m[kv.Key] = kv.Value
		}
		want := map[string]any{"key": c.key, "headers": h, "meta": m, "offset": c.offset, "ts": c.ts.Format(time.RFC3339Nano)}
		fields, _ := json.Marshal(map[string]any{"want": want})
		in.SetValue(fields)
		kept, err := e.decide(in, f.conds[:], f.cond.p.Fields(), nil)
		if err != nil || len(kept) != 1 {
			t.Errorf("record %+v: kept %v, err %v", c, kept, err)
		}
	}
}

// Guarantee: a map that stores metadata in a field stores that record's own,
// not a value the next record's evaluation overwrites.
func TestMapStoresMetadataByValue(t *testing.T) {
	m, err := NewMap(MapConfig{Set: []Assignment{{"o", "@origin"}, {"h", "@headers"}}})
	if err != nil {
		t.Fatal(err)
	}
	var outs []record.Record
	for i := range 3 {
		in := rec(`{}`)
		in.Origin.Offset = int64(i)
		in.Headers = []record.Header{{Key: "n", Value: []byte{'0' + byte(i)}}}
		if outs, err = m.Process(in, outs); err != nil {
			t.Fatal(err)
		}
	}
	for i := range outs {
		got := fieldsOf(t, &outs[i])
		if got["o"].(map[string]any)["offset"] != float64(i) || got["h"].(map[string]any)["n"] != string(rune('0'+i)) {
			t.Errorf("output %d: %v", i, got)
		}
	}
}

// Guarantee: metadata whose name has a dot (what the dead_letter format sets)
// is read by index.
func TestMetaWithDots(t *testing.T) {
	in := rec(`{}`)
	in.Meta = []record.Meta{{Key: "dead_letter.name", Value: "warehouse"}}
	out, err := mustFilter(t, `@meta["dead_letter.name"] == "warehouse" && @meta.absent == ""`).Process(in, nil)
	if err != nil || len(out) != 1 {
		t.Fatalf("kept %d, %v", len(out), err)
	}
}

// evalObj evaluates x as a map does, on r indexed into e's object.
func evalObj(e *env, x *Expr, r *record.Record) (record.Value, error) {
	e.lang.Bind(r, &e.obj)
	return e.eval(x)
}

// hasRef reports whether r carries an acknowledgement reference, which only
// the runtime can set (record keeps it unexported).
func hasRef(r *record.Record) bool {
	return !reflect.ValueOf(r).Elem().FieldByName("ack").IsZero()
}

// TestApplyIsKeep checks that a filter decides the same with a Scratch
// kept across records (the runtime's filter chain) as with pooled state for
// each: kept, dropped, and a record error, with the Scratch released midway.
func TestApplyIsKeep(t *testing.T) {
	f, err := NewFilter(`id % 3 != 0 && name != "x"`)
	if err != nil {
		t.Fatal(err)
	}
	values := []string{
		`{"id":1,"name":"a"}`, `{"id":3,"name":"a"}`, `{"id":4,"name":"x"}`,
		`{"id":"seven","name":"a"}`, `{"name":"a"}`, `{"id":5}`, `[1]`, `{"id":8,"name":"b"}`,
	}
	var s Scratch
	kept := 0
	for i, v := range values {
		a, b := record.New([]byte(v)), record.New([]byte(v))
		want, werr := f.Keep(&a)
		got, gerr := f.Apply(&s, &b)
		if got != want || (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
			t.Errorf("%s: Apply = %v, %v; Keep = %v, %v", v, got, gerr, want, werr)
		}
		if got {
			kept++
		}
		if i == 3 {
			s.Release()
		}
	}
	s.Release()
	if kept != 3 {
		t.Errorf("kept %d of %d records, want 3 (ids 1, 5 and 8)", kept, len(values))
	}
}

// TestMapApplyIsProcess checks that a map changes a record where it lies
// exactly as Process changes the output it appends, with one Scratch across
// records: the value, byte for byte; a drop(); and an error, after which the
// record is as it was (the runtime dead-letters the record the map saw).
func TestMapApplyIsProcess(t *testing.T) {
	m, err := NewMap(MapConfig{
		Set: []Assignment{
			{Field: "total", Expr: `qty * price`},
			{Field: "x", Expr: `qty < 0 ? drop() : "kept"`},
		},
		Rename: []Rename{{From: "tag", To: "label"}},
		Delete: []string{"tmp"},
	})
	if err != nil {
		t.Fatal(err)
	}
	values := []string{
		`{"qty":2,"price":5,"tag":"a","tmp":1}`,
		`{"qty":-1,"price":5}`,
		`{"qty":"two","price":5}`,
		`{ "price" : 7 , "qty" : 3 ,"tag":"\u00e9"}`,
		`[1,2]`,
		`{"qty":1,"price":1e400}`,
	}
	var s Scratch
	defer s.Release()
	changed := 0
	for _, v := range values {
		a, b := record.New([]byte(v)), record.New([]byte(v))
		out, perr := m.Process(&a, nil)
		keep, aerr := m.Apply(&s, &b)
		if (perr == nil) != (aerr == nil) || (perr != nil && perr.Error() != aerr.Error()) {
			t.Errorf("%s: Apply error %v, Process error %v", v, aerr, perr)
		}
		if keep != (len(out) == 1) {
			t.Errorf("%s: Apply kept %v, Process gave %d outputs", v, keep, len(out))
		}
		switch {
		case keep && len(out) == 1:
			if !bytes.Equal(b.Bytes(), out[0].Bytes()) {
				t.Errorf("%s: Apply made %s, Process %s", v, b.Bytes(), out[0].Bytes())
			}
			if !bytes.Equal(b.Original(), []byte(v)) {
				t.Errorf("%s: Apply lost the value read: Original() = %s", v, b.Original())
			}
			if string(b.Bytes()) != v {
				changed++
			}
		case aerr != nil:
			if string(b.Bytes()) != v {
				t.Errorf("%s: Apply failed (%v) and left the record changed: %s", v, aerr, b.Bytes())
			}
		}
	}
	if changed != 2 {
		t.Errorf("%d records changed, want 2", changed)
	}
}
