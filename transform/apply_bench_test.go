package transform

import (
	"testing"

	"github.com/weir-etl/weir/record"
)

// BenchmarkApplyOneField is the filter chain's path (Filter.Apply with the
// batch's Scratch) on BenchmarkFilterOneField's records; BenchmarkBareLookupOneField
// is the same decision by hand with the same scanner: the difference is what
// evaluating the condition costs beyond reading the field.
func BenchmarkApplyOneField(b *testing.B) {
	f, err := NewFilter(`id % 2 == 0`)
	if err != nil {
		b.Fatal(err)
	}
	var s Scratch
	defer s.Release()
	kept := 0
	benchRecords(b, func(in *record.Record) error {
		ok, err := f.Apply(&s, in)
		if ok {
			kept++
		}
		return err
	})
	if kept == 0 {
		b.Fatal("nothing kept")
	}
}

func BenchmarkBareLookupOneField(b *testing.B) {
	names := []string{"id"}
	vals := make([]record.Value, 1)
	found := make([]bool, 1)
	kept := 0
	benchRecords(b, func(in *record.Record) error {
		if err := in.Lookup(names, vals, found); err != nil {
			return err
		}
		id, err := vals[0].Int()
		if err != nil {
			return err
		}
		if id%2 == 0 {
			kept++
		}
		return nil
	})
	if kept == 0 {
		b.Fatal("nothing kept")
	}
}
