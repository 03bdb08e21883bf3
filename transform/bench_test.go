package transform

import (
	"fmt"
	"testing"

	"github.com/weir-etl/weir/record"
)

// benchValues are typical small records, about 75 bytes of NDJSON each, with
// ids that differ as they would in a real stream.
var benchValues = func() [][]byte {
	vs := make([][]byte, 256)
	for i := range vs {
		vs[i] = fmt.Appendf(nil, `{"id":%d,"name":"abc","amount":12.5,"region":"eu","user":{"age":%d}}`, 100000+i, 20+i%50)
	}
	return vs
}()

var benchKey = []byte("k")

// benchRecords calls fn with a fresh record for each iteration, the way the
// runtime hands one to a transform: in a slot that outlives the call (so the
// record itself is not an allocation of the transform), never decoded before.
func benchRecords(b *testing.B, fn func(in *record.Record) error) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchValues[0])))
	slot := new(record.Record)
	i := 0
	for b.Loop() {
		*slot = record.New(benchValues[i%len(benchValues)])
		slot.Key = benchKey
		slot.Origin = record.Origin{Source: "in", Partition: "p", Offset: int64(i)}
		i++
		if err := fn(slot); err != nil {
			b.Fatal(err)
		}
	}
}

func benchTransform(b *testing.B, t Transform) {
	out := make([]record.Record, 0, 4)
	benchRecords(b, func(in *record.Record) error {
		var err error
		out, err = t.Process(in, out[:0])
		clear(out)
		return err
	})
}

func benchFilter(b *testing.B, cond string) {
	f, err := NewFilter(cond)
	if err != nil {
		b.Fatal(err)
	}
	benchTransform(b, f)
}

func BenchmarkFilterOneField(b *testing.B)  { benchFilter(b, `id % 2 == 0`) }
func BenchmarkFilterNested(b *testing.B)    { benchFilter(b, `user.age > 30`) }
func BenchmarkFilterTwoFields(b *testing.B) { benchFilter(b, `user.age > 30 && region == "eu"`) }
func BenchmarkFilterKeyOnly(b *testing.B)   { benchFilter(b, `@key == "k"`) }
func BenchmarkFilterOffsetMod(b *testing.B) { benchFilter(b, `@origin.offset % 2 == 0`) }
func BenchmarkFilterIntRange(b *testing.B)  { benchFilter(b, `id >= 10 && id % 3 != 0`) }
func BenchmarkFilterFieldsAndMetadata(b *testing.B) {
	benchFilter(b, `id % 2 == 1 && @origin.offset >= 0`)
}

func BenchmarkRoute(b *testing.B) {
	r, err := NewRoute([]RouteOutput{{"big", "id > 100100"}, {"eu", `region == "eu"`}, {"old", "user.age > 60"}})
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]int, 0, 4)
	benchRecords(b, func(in *record.Record) error {
		var err error
		dst, err = r.Route(in, dst[:0])
		return err
	})
}

func BenchmarkMap(b *testing.B) {
	m, err := NewMap(MapConfig{
		Set:    []Assignment{{"user.adult", "user.age >= 18"}},
		Rename: []Rename{{"region", "geo"}},
		Delete: []string{"name"},
	})
	if err != nil {
		b.Fatal(err)
	}
	out := make([]record.Record, 0, 4)
	benchRecords(b, func(in *record.Record) error {
		var err error
		if out, err = m.Process(in, out[:0]); err != nil {
			return err
		}
		_, err = out[0].Value() // re-encoding is part of a map's cost
		clear(out)
		return err
	})
}

// benchWide is a record of about 200 bytes, of the kinds of fields that a
// rename must copy exactly: an id beyond 2^53, a float, an escaped string,
// nested objects and arrays.
var benchWide = func() [][]byte {
	vs := make([][]byte, 256)
	for i := range vs {
		vs[i] = fmt.Appendf(nil, `{"id":%d,"account":"acct-%05d","amount":1234.50,"currency":"EUR","note":"caf\u00e9 \"x\"","tags":["a","b","c"],"user":{"name":"ann","age":%d,"vip":true},"ts":"2026-02-01T19:27:17Z","ok":true}`,
			9007199254740993+i, i, 20+i%50)
	}
	return vs
}()

func benchMapOn(b *testing.B, values [][]byte, cfg MapConfig) {
	m, err := NewMap(cfg)
	if err != nil {
		b.Fatal(err)
	}
	out := make([]record.Record, 0, 4)
	b.ReportAllocs()
	b.SetBytes(int64(len(values[0])))
	slot := new(record.Record)
	i := 0
	for b.Loop() {
		*slot = record.New(values[i%len(values)])
		i++
		if out, err = m.Process(slot, out[:0]); err != nil {
			b.Fatal(err)
		}
		if _, err = out[0].Value(); err != nil { // encoding is part of a map's cost
			b.Fatal(err)
		}
		clear(out)
	}
}

// The targets: a rename or a set of one field on a ~200-byte
// record, and three computed fields on a small one.
func BenchmarkMapRenameOne(b *testing.B) {
	benchMapOn(b, benchWide, MapConfig{Rename: []Rename{{"currency", "ccy"}}})
}

func BenchmarkMapSetOne(b *testing.B) {
	benchMapOn(b, benchWide, MapConfig{Set: []Assignment{{"ok", "false"}}})
}

func BenchmarkMapThreeComputed(b *testing.B) {
	benchMapOn(b, benchValues, MapConfig{Set: []Assignment{
		{"user", `"u" + string(id % 1000)`},
		{"amount", `((id * 7919) % 100000) / 100`},
		{"tags", `["a", "b"]`},
	}})
}

func BenchmarkFilterOrigin(b *testing.B) {
	benchFilter(b, `@origin.partition == "p" && @origin.source == "in"`)
}

func BenchmarkFlatMap(b *testing.B) {
	f, err := NewFlatMap(FlatMapConfig{Explode: "tags", As: "tag"})
	if err != nil {
		b.Fatal(err)
	}
	v := []byte(`{"id":1,"tags":["a","b","c"]}`)
	out := make([]record.Record, 0, 4)
	b.ReportAllocs()
	slot := new(record.Record)
	for b.Loop() {
		*slot = record.New(v)
		if out, err = f.Process(slot, out[:0]); err != nil {
			b.Fatal(err)
		}
		clear(out)
	}
}

// benchOrders are records of about 170 bytes with what the five computed
// fields of the issue read: names to join, a quantity and a price to
// multiply, a time to reformat, a nested city.
var benchOrders = func() [][]byte {
	vs := make([][]byte, 256)
	for i := range vs {
		vs[i] = fmt.Appendf(nil, `{"id":%d,"first":"Ann","last":"Lee","qty":%d,"price_cents":1250,"ts":"2026-02-%02dT19:27:17Z","user":{"address":{"city":"Lyon","zip":"69001"},"age":33}}`,
			100000+i, 1+i%5, 1+i%28)
	}
	return vs
}()

// fiveComputed is the realistic map: a concatenation, arithmetic, a
// conditional, a timestamp parse and format, a nested read.
var fiveComputed = MapConfig{Set: []Assignment{
	{"name", `first + " " + last`},
	{"total", `qty * price_cents`},
	{"tier", `total > 3000 ? "gold" : "std"`},
	{"day", `format_time(parse_time(ts), "%Y-%m-%d")`},
	{"city", `user.address.city`},
}}

func BenchmarkMapFiveComputed(b *testing.B) { benchMapOn(b, benchOrders, fiveComputed) }
