package transform

import (
	"testing"

	"github.com/weir-etl/weir/record"
)

// benchValue is a typical small record: about 60 bytes of JSON.
var benchValue = []byte(`{"id":12345,"user":{"name":"ann","age":31},"region":"eu"}`)

func benchTransform(b *testing.B, t Transform) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchValue)))
	out := make([]record.Record, 0, 4)
	for b.Loop() {
		// A fresh record each time: decoding is part of the cost.
		in := record.New(benchValue)
		var err error
		out, err = t.Process(&in, out[:0])
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFilterFields(b *testing.B) {
	f, _ := NewFilter(`user.age > 30 && region == "eu"`)
	benchTransform(b, f)
}

func BenchmarkFilterKeyOnly(b *testing.B) {
	f, _ := NewFilter(`key == ""`)
	benchTransform(b, f)
}

func BenchmarkFilterFieldsAndMetadata(b *testing.B) {
	f, _ := NewFilter(`id % 2 == 1 && origin.offset >= 0`)
	benchTransform(b, f)
}

func BenchmarkMap(b *testing.B) {
	m, _ := NewMap(MapConfig{
		Set:    []Assignment{{"user.adult", "user.age >= 18"}},
		Rename: []Rename{{"region", "geo"}},
		Delete: []string{"id"},
	})
	b.ReportAllocs()
	out := make([]record.Record, 0, 4)
	for b.Loop() {
		in := record.New(benchValue)
		var err error
		out, err = m.Process(&in, out[:0])
		if err != nil {
			b.Fatal(err)
		}
		if _, err := out[0].Value(); err != nil { // re-encoding is part of a map's cost
			b.Fatal(err)
		}
	}
}

func BenchmarkFlatMap(b *testing.B) {
	f, _ := NewFlatMap(FlatMapConfig{Explode: "tags", As: "tag"})
	v := []byte(`{"id":1,"tags":["a","b","c"]}`)
	b.ReportAllocs()
	out := make([]record.Record, 0, 4)
	for b.Loop() {
		in := record.New(v)
		var err error
		out, err = f.Process(&in, out[:0])
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRoute(b *testing.B) {
	r, _ := NewRoute([]RouteOutput{{"big", "id > 1000"}, {"eu", `region == "eu"`}, {"old", "user.age > 60"}})
	b.ReportAllocs()
	dst := make([]int, 0, 4)
	for b.Loop() {
		in := record.New(benchValue)
		var err error
		dst, err = r.Route(&in, dst[:0])
		if err != nil {
			b.Fatal(err)
		}
	}
}
