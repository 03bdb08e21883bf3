package record_test

import (
	"fmt"
	"testing"

	"github.com/weir-etl/weir/record"
)

// benchObjs are small records of about 75 bytes, as transform's benchmarks
// use.
var benchObjs = func() [][]byte {
	vs := make([][]byte, 256)
	for i := range vs {
		vs[i] = fmt.Appendf(nil, `{"id":%d,"name":"abc","amount":12.5,"region":"eu","user":{"age":%d}}`, 100000+i, 20+i%50)
	}
	return vs
}()

// BenchmarkObjThreeSets is the object work of a map that sets three fields
// (two in their places, one appended) on a small record: index it, read a
// field, set the fields, write it out.
func BenchmarkObjThreeSets(b *testing.B) {
	var o record.Obj
	tags := record.EncodedArray([]record.Value{record.StringValue("a"), record.StringValue("b")})
	var out []byte
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := o.Reset(benchObjs[i%len(benchObjs)]); err != nil {
			b.Fatal(err)
		}
		i++
		id, _ := o.Get("id")
		n, _ := id.IntForm()
		o.Set("user", record.StringValue("u42"))
		o.Set("amount", record.FloatValue(float64((n*7919)%100000)/100))
		o.Set("tags", tags)
		out = o.AppendJSON(out[:0])
	}
}

// BenchmarkAppendFloat writes floats of a few decimals, as amounts are.
func BenchmarkAppendFloat(b *testing.B) {
	var out []byte
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		out = record.FloatValue(float64((int64(i)*7919)%100000) / 100).AppendJSON(out[:0])
		i++
	}
}

// BenchmarkObjReset indexes a small record: the scan every map starts with.
func BenchmarkObjReset(b *testing.B) {
	var o record.Obj
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := o.Reset(benchObjs[i%len(benchObjs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkValid checks the same records without indexing them.
func BenchmarkValid(b *testing.B) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := record.Valid(benchObjs[i%len(benchObjs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
