package pipeline

import (
	"testing"

	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/transform"
)

type upperCaseTwice struct{}

func (upperCaseTwice) Process(in *record.Record, out []record.Record) ([]record.Record, error) {
	return append(out, *in), nil
}

// A transform built in Go without a registered type is named by its Go type
// in the file's spelling, with no list of transform names in the runtime.
func TestKindOfAGoBuiltTransformIsItsGoTypeInSnakeCase(t *testing.T) {
	fm, err := transform.NewFlatMap(transform.FlatMapConfig{Explode: "items"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := transform.NewRoute([]transform.RouteOutput{{Name: "a", Condition: "true"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ct   compiledTransform
		want string
	}{
		{compiledTransform{t: fm}, "flat_map"},
		{compiledTransform{r: r}, "route"},
		{compiledTransform{t: upperCaseTwice{}}, "upper_case_twice"},
		{compiledTransform{typ: "mask", t: upperCaseTwice{}}, "mask"},
		{compiledTransform{t: transformFunc(nil)}, "transform_func"},
	} {
		if got := kindOf(&c.ct); got != c.want {
			t.Errorf("kindOf(%T) = %q, want %q", c.ct.t, got, c.want)
		}
	}
}

type transformFunc func(*record.Record) error

func (f transformFunc) Process(in *record.Record, out []record.Record) ([]record.Record, error) {
	return append(out, *in), f(in)
}
