package transform

import (
	"fmt"
	"sync"
	"time"

	"github.com/expr-lang/expr/vm"

	"github.com/weir-etl/weir/record"
)

// env is the state of one evaluation: a VM and the environment map handed to
// it, and the values of the reserved names kept from one record to the next.
// Envs are pooled: building them for each record would cost more than
// evaluating a small condition.
type env struct {
	vm vm.VM
	m  map[string]any

	// The values below are reused by conditions only (see Expr.cond): a
	// condition gives a bool, so no reference to them survives its
	// evaluation, while a map's set expression may store one in a record.
	origin  Origin
	headers map[string]string
	meta    map[string]string

	// Boxing a value into the map allocates, so the boxed key and timestamp
	// are kept for as long as records carry the same ones, which is common
	// (a batch's records share a tenant key or a read time). Strings and
	// times are immutable, so every expression may share them.
	key    string
	keyVal any
	ts     time.Time
	tsVal  any
}

var envPool = sync.Pool{New: func() any { return &env{m: make(map[string]any, 8)} }}

func getEnv() *env { return envPool.Get().(*env) }

func putEnv(e *env) {
	clear(e.m)
	envPool.Put(e)
}

// decide evaluates the conditions conds against r, appending the index of
// each that holds to dst, after building one environment for all of them:
// the union of the fields they read, looked up without decoding the rest of
// the value (record.LookupFields), and the metadata they read (needs). It
// stops at the first record error.
func (e *env) decide(r *record.Record, conds []*Expr, fields []string, n needs, dst []int) ([]int, error) {
	clear(e.m)
	if len(fields) > 0 {
		if err := r.LookupFields(fields, e.m); err != nil {
			return dst, fmt.Errorf("transform: %w", err)
		}
	}
	// Reserved names shadow fields of the same name, so they go in last.
	e.addReserved(r, n, true)
	for i, c := range conds {
		ok, err := e.condition(c, e.m)
		if err != nil {
			return dst, err
		}
		if ok {
			dst = append(dst, i)
		}
	}
	return dst, nil
}

// value evaluates x, a map or flat_map expression, against the decoded fields
// of r (which the caller has changed as the transform's earlier steps say).
func (e *env) value(x *Expr, r *record.Record, fields map[string]any) (any, error) {
	m := fields
	if x.needs&needReserved != 0 {
		// Reserved names shadow fields of the same name. The fields are
		// copied in again on each evaluation because a map transform's
		// earlier assignments may have changed them.
		clear(e.m)
		for k, v := range fields {
			e.m[k] = v
		}
		e.addReserved(r, x.needs, false)
		m = e.m
	}
	return e.run(x, m)
}

func (e *env) run(x *Expr, m map[string]any) (any, error) {
	out, err := e.vm.Run(x.prog, m)
	if err != nil {
		return nil, fmt.Errorf("transform: %s: expression %q: %s", x.what, x.src, firstLine(err))
	}
	return out, nil
}

// condition evaluates a condition. A result that is not a bool is a record
// error: a condition that is neither true nor false cannot be decided.
func (e *env) condition(x *Expr, m map[string]any) (bool, error) {
	v, err := e.run(x, m)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("transform: %s: expression %q gave %s, not a bool", x.what, x.src, describe(v))
	}
	return b, nil
}

// addReserved puts into e.m the metadata of r named by n. reuse says that the
// values may be built in e's own storage (for conditions); otherwise each
// container is new, because the expression's result may keep it.
func (e *env) addReserved(r *record.Record, n needs, reuse bool) {
	if n&needKey != 0 {
		if e.keyVal == nil || e.key != string(r.Key) {
			e.key = string(r.Key)
			e.keyVal = e.key
		}
		e.m[nameKey] = e.keyVal
	}
	if n&needHeaders != 0 {
		var h map[string]string
		if reuse {
			h = e.reuseHeaders(r.Headers)
		} else {
			h = make(map[string]string, len(r.Headers))
			for _, kv := range r.Headers {
				h[kv.Key] = string(kv.Value)
			}
		}
		e.m[nameHeaders] = h
	}
	if n&needMeta != 0 {
		mm := e.meta
		if !reuse || mm == nil {
			mm = make(map[string]string, len(r.Meta))
		} else {
			clear(mm)
		}
		for _, kv := range r.Meta {
			mm[kv.Key] = kv.Value
		}
		if reuse {
			e.meta = mm
		}
		e.m[nameMeta] = mm
	}
	if n&needTimestamp != 0 {
		if e.tsVal == nil || e.ts != r.Time {
			e.ts, e.tsVal = r.Time, r.Time
		}
		e.m[nameTimestamp] = e.tsVal
	}
	if n&needOrigin != 0 {
		o := &e.origin
		if !reuse {
			o = new(Origin)
		}
		*o = Origin{Source: r.Origin.Source, Partition: r.Origin.Partition, Offset: r.Origin.Offset}
		e.m[nameOrigin] = o
	}
}

// reuseHeaders fills e.headers with hs, keeping the strings of values that
// have not changed since the previous record: converting a header's bytes
// allocates, and headers (a message type, a schema id) repeat.
func (e *env) reuseHeaders(hs []record.Header) map[string]string {
	if e.headers == nil {
		e.headers = make(map[string]string, len(hs))
	}
	h := e.headers
	// In order, so that of duplicate keys the last wins, as in a new map.
	for _, kv := range hs {
		if old, ok := h[kv.Key]; !ok || old != string(kv.Value) {
			h[kv.Key] = string(kv.Value)
		}
	}
	if len(h) > 0 {
		// Drop the previous record's headers that this one lacks.
		for k := range h {
			if !hasHeader(hs, k) {
				delete(h, k)
			}
		}
	}
	return h
}

func hasHeader(hs []record.Header, key string) bool {
	for _, kv := range hs {
		if kv.Key == key {
			return true
		}
	}
	return false
}
