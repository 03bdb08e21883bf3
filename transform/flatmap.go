package transform

import (
	"fmt"
	"regexp"

	"github.com/weir-etl/weir/lang"
	"github.com/weir-etl/weir/record"
)

// FlatMapConfig configures a flat_map transform.
type FlatMapConfig struct {
	// Explode is an expression giving an array, most often a field ("items").
	Explode string
	// As is the field (a dotted path) that receives an element that is not an
	// object. The default is Explode itself when Explode is a field path, so
	// that `explode: tags` turns {"id":1,"tags":["a","b"]} into
	// {"id":1,"tags":"a"} and {"id":1,"tags":"b"}; otherwise "value".
	As string
}

// FlatMap turns a record into one record per element of an array
// ("flat_map"). An element that is an object becomes the new record's fields;
// any other element is stored under As in a copy of the parent's fields. An
// empty or null array drops the record. The new records keep the parent's key,
// headers, metadata, time and origin.
type FlatMap struct {
	explode *Expr
	as      path
}

// DefaultAs is the field that receives non-object elements when Explode is
// not a field path and As is not given.
const DefaultAs = "value"

var fieldPath = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// NewFlatMap compiles cfg.
func NewFlatMap(cfg FlatMapConfig) (*FlatMap, error) {
	x, err := Compile("flat_map explode", cfg.Explode)
	if err != nil {
		return nil, err
	}
	as := cfg.As
	if as == "" {
		as = DefaultAs
		if fieldPath.MatchString(cfg.Explode) && x.p.Needs()&lang.NeedMetadata == 0 {
			as = cfg.Explode
		}
	}
	p, err := parsePath(as)
	if err != nil {
		return nil, err
	}
	return &FlatMap{explode: x, as: p}, nil
}

// Process appends one record per element of the exploded array. An object
// element is written out as it was read; the parent's other fields are
// copied byte for byte into each output of a non-object element.
func (f *FlatMap) Process(in *record.Record, out []record.Record) ([]record.Record, error) {
	e := getEnv()
	defer putEnv(e)
	o := &e.obj
	// The parent's fields are needed for non-object elements even when the
	// expression does not read them; indexing once here serves both.
	if err := in.Index(o); err != nil {
		return out, fmt.Errorf("transform: flat_map: %w", err)
	}
	e.lang.Bind(in, o)
	v, err := e.eval(f.explode)
	if err == lang.ErrDrop {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	switch v.Kind() {
	case record.Null:
		return out, nil
	case record.Array:
	default:
		return out, fmt.Errorf("transform: flat_map explode: expression %q gave %s, not an array", f.explode.String(), kindOf(v))
	}
	var elems []record.Value
	v.Elems(func(_ int, el record.Value) bool { elems = append(elems, el); return true })
	base := in.Bytes()
	for _, el := range elems {
		var b []byte
		if el.Kind() == record.Object {
			b = el.AppendJSON(nil)
		} else {
			if err := o.Reset(base); err != nil {
				return out, fmt.Errorf("transform: flat_map: %w", err)
			}
			if err := f.as.set(o, lang.Own(el)); err != nil {
				return out, err
			}
			b = o.AppendJSON(make([]byte, 0, len(base)+16))
		}
		// Each output copies the parent's metadata; its own fields make its
		// value, and the runtime attaches its reference.
		c := in.CloneData()
		c.Replace(b, true)
		out = append(out, c)
	}
	return out, nil
}
