package lang

import (
	"strings"
	"time"
	_ "time/tzdata" // zones by name work where the system has no zone database

	"github.com/weir-etl/weir/record"
)

// timeNode evaluates a subtree as a time.Time without boxing it in a
// record.Value (which allocates): ok is false when the generic node would
// give anything else, or fail. See fast.go.
type timeNode func(f *frame) (time.Time, bool)

// timeForm returns the unboxed path of x, or nil: @timestamp, and
// parse_time of a string with a constant layout.
func (c *compiler) timeForm(x expr) timeNode {
	switch x := x.(type) {
	case *metaExpr:
		if x.name == "timestamp" {
			c.needs |= NeedTimestamp
			return func(f *frame) (time.Time, bool) {
				if f.r == nil {
					return time.Time{}, false
				}
				return f.r.Time, true
			}
		}
	case *callExpr:
		fn := lookupFunc(x.name)
		if fn == nil || fn.Name != "parse_time" || len(x.args) == 0 {
			return nil
		}
		l, loc, err := c.layoutArgs(x, 1)
		if err != nil {
			return nil
		}
		if id, ok := x.args[0].(*identExpr); ok { // a field: parsed where it is
			read := c.read(id)
			return func(f *frame) (time.Time, bool) {
				v := read(f)
				if v.Kind() != record.String {
					return time.Time{}, false
				}
				t, err := l.parse(v.Text(), loc)
				return t, err == nil
			}
		}
		s, _ := c.strForm(x.args[0])
		if s == nil {
			return nil
		}
		return func(f *frame) (time.Time, bool) {
			e := f.env
			start := len(e.scratch)
			b, ok := s(f, e.scratch)
			if !ok {
				return time.Time{}, false
			}
			t, err := l.parse(record.BytesString(b[start:]), loc)
			e.scratch = b[:start]
			return t, err == nil
		}
	}
	return nil
}

// layoutArgs reads the constant layout (argument i) and zone (i+1) of a
// time function, when given.
func (c *compiler) layoutArgs(x *callExpr, i int) (*layout, *time.Location, *Error) {
	l := &layout{name: "rfc3339", goL: time.RFC3339Nano}
	loc := time.UTC
	if len(x.args) > i {
		lit, ok := x.args[i].(*litExpr)
		if !ok || lit.val.Kind() != record.String {
			return nil, nil, c.errAt(x.args[i], "%s: the layout must be a constant string, so that it is compiled once at load", x.name)
		}
		var err error
		if l, err = compileLayout(lit.val.Text()); err != nil {
			return nil, nil, c.errAt(x.args[i], "%s: %v", x.name, err)
		}
	}
	if len(x.args) > i+1 {
		lit, ok := x.args[i+1].(*litExpr)
		if !ok || lit.val.Kind() != record.String {
			return nil, nil, c.errAt(x.args[i+1], "%s: the zone must be a constant string, such as \"Europe/Paris\"", x.name)
		}
		z, err := time.LoadLocation(lit.val.Text())
		if err != nil {
			return nil, nil, c.errAt(x.args[i+1], "%s: unknown time zone %q (an IANA name such as Europe/Paris, or UTC, or Local)", x.name, lit.val.Text())
		}
		loc = z
	}
	return l, loc, nil
}

// formatTimeForm is format_time's appending path: the time formatted into
// the scratch buffer, from an unboxed time when its argument has one.
func (c *compiler) formatTimeForm(x *callExpr) (strNode, bool) {
	if len(x.args) == 0 {
		return nil, false
	}
	l, loc, err := c.layoutArgs(x, 1)
	if err != nil {
		return nil, false
	}
	inZone := len(x.args) > 2
	if t := c.timeForm(x.args[0]); t != nil {
		return func(f *frame, dst []byte) ([]byte, bool) {
			tm, ok := t(f)
			if !ok {
				return dst, false
			}
			if inZone {
				tm = tm.In(loc)
			}
			return l.appendTime(dst, tm), true
		}, true
	}
	return nil, false
}

func init() {
	timeP := Param{Name: "t", Type: TTime}
	layoutP := Param{Name: "layout", Type: TString, Optional: true, Const: true}
	zoneP := Param{Name: "zone", Type: TString, Optional: true, Const: true}
	unitP := Param{Name: "unit", Type: TString, Optional: true, Const: true}
	register(
		&Func{Name: "now", Category: "time", Result: TTime, Impure: true, Doc: "The time of the evaluation.", Example: `now() > parse_time("2020-01-01T00:00:00Z")`, Output: "true",
			build: func(c *compiler, x *callExpr, args []compiled) (compiled, *Error) {
				return compiled{eval: func(f *frame) (record.Value, error) { return record.TimeValue(f.env.clock()), nil }, typ: TTime}, nil
			}},
		&Func{Name: "parse_time", Category: "time", Aliases: []string{"date"},
			Params:  []Param{{Name: "s", Type: TString | TNumber | TNull}, layoutP, {Name: "zone", Type: TString, Optional: true, Const: true}},
			Result:  TTime,
			Doc:     "The time s writes, by layout: a name (" + LayoutNames + "), a strftime layout (%Y-%m-%dT%H:%M:%S%z) or a Go layout (2006-01-02). A time without a zone is in zone (UTC by default). The unix layouts also take a number. The layout is compiled once at load.",
			Example: `parse_time("01/02/2026 14:05", "%d/%m/%Y %H:%M")`, Output: `parse_time("2026-02-01T14:05:00Z")`,
			build: func(c *compiler, x *callExpr, args []compiled) (compiled, *Error) {
				l, loc, err := c.layoutArgs(x, 1)
				if err != nil {
					return compiled{}, err
				}
				f := &Func{Name: "parse_time", Result: TTime, fn1: func(v record.Value) (record.Value, error) {
					if l.unit != 0 && isNumber(v) {
						n, err := integer("parse_time", "s", v)
						if err != nil {
							return record.Value{}, err
						}
						t, _ := fromUnix(n, l.unit)
						return record.TimeValue(t), nil
					}
					s, err := str("parse_time", v)
					if err != nil {
						return record.Value{}, err
					}
					t, perr := l.parse(s, loc)
					if perr != nil {
						return record.Value{}, fnError("parse_time", "%q is not a time of layout %s: %v", truncateText(s), l.name, strings.TrimPrefix(perr.Error(), "parsing time "))
					}
					return record.TimeValue(t), nil
				}}
				return c.direct(f, args[:1]), nil
			}},
		&Func{Name: "format_time", Category: "time", Params: []Param{timeP, layoutP, zoneP}, Result: TString,
			Doc:     "t written by layout (as parse_time's; rfc3339 by default), in zone when given (an IANA name, fixed at load), else in t's own.",
			Example: `format_time(parse_time("2026-02-01T23:30:00Z"), "%A %d %B %Y, %H:%M %Z", "Europe/Paris")`, Output: `"Monday 02 February 2026, 00:30 CET"`,
			build: func(c *compiler, x *callExpr, args []compiled) (compiled, *Error) {
				l, loc, err := c.layoutArgs(x, 1)
				if err != nil {
					return compiled{}, err
				}
				inZone := len(args) > 2
				f := &Func{Name: "format_time", Result: TString, fn1: func(v record.Value) (record.Value, error) {
					if v.Kind() != record.Time {
						return record.Value{}, timeArg("format_time", v)
					}
					t := v.Time()
					if inZone {
						t = t.In(loc)
					}
					return sv(string(l.appendTime(nil, t))), nil
				}}
				return c.direct(f, args[:1]), nil
			}},
		&Func{Name: "to_unix", Category: "time", Params: []Param{timeP, unitP}, Result: TInt,
			Doc: "t as a count of unit since 1970-01-01 UTC: s (default), ms, us or ns (rounded down).", Example: `to_unix(parse_time("2026-02-01T00:00:00Z"), "ms")`, Output: `1769904000000`,
			build: unitFn("to_unix", func(t time.Time, unit int64) (record.Value, error) {
				switch unit {
				case 1e9:
					return record.IntValue(t.Unix()), nil
				case 1e6:
					return record.IntValue(t.UnixMilli()), nil
				case 1e3:
					return record.IntValue(t.UnixMicro()), nil
				}
				if t.Year() < 1678 || t.Year() > 2261 {
					return record.Value{}, fnError("to_unix", "%s in nanoseconds does not fit int64", t.Format(time.RFC3339))
				}
				return record.IntValue(t.UnixNano()), nil
			})},
		&Func{Name: "from_unix", Category: "time", Params: []Param{{Name: "n", Type: TNumber | TNull}, unitP}, Result: TTime,
			Doc: "The time n units after 1970-01-01 UTC: s (default), ms, us or ns.", Example: `format_time(from_unix(1769904000))`, Output: `"2026-02-01T00:00:00Z"`,
			build: func(c *compiler, x *callExpr, args []compiled) (compiled, *Error) {
				unit, err := c.unitArg(x, 1)
				if err != nil {
					return compiled{}, err
				}
				f := &Func{Name: "from_unix", Result: TTime, fn1: func(v record.Value) (record.Value, error) {
					n, err := integer("from_unix", "n", v)
					if err != nil {
						return record.Value{}, err
					}
					t, _ := fromUnix(n, unit)
					return record.TimeValue(t), nil
				}}
				return c.direct(f, args[:1]), nil
			}},
		&Func{Name: "truncate_time", Category: "time", Params: []Param{timeP, {Name: "unit", Type: TString, Const: true}}, Result: TTime,
			Doc:     "t rounded down to a unit: second, minute, hour, day, week (Monday), month, year (in t's zone), or a duration such as 15m (since 1970 UTC).",
			Example: `format_time(truncate_time(parse_time("2026-02-05T13:47:12Z"), "15m"))`, Output: `"2026-02-05T13:45:00Z"`,
			build: roundFn("truncate_time", false)},
		&Func{Name: "round_time", Category: "time", Params: []Param{timeP, {Name: "unit", Type: TString, Const: true}}, Result: TTime,
			Doc:     "t rounded to the nearest multiple of a duration (halfway up), such as 1h or 15m.",
			Example: `format_time(round_time(parse_time("2026-02-05T13:47:12Z"), "1h"))`, Output: `"2026-02-05T14:00:00Z"`,
			build: roundFn("round_time", true)},
		&Func{Name: "time_diff", Category: "time", Params: []Param{{Name: "a", Type: TTime}, {Name: "b", Type: TTime}, unitP}, Result: TInt,
			Doc:     "a - b as a whole count of unit (s by default; ms, us, ns, m, h or d), rounded toward zero. a - b itself is a duration.",
			Example: `time_diff(parse_time("2026-02-02T00:00:00Z"), parse_time("2026-02-01T12:00:00Z"), "h")`, Output: `12`,
			build: func(c *compiler, x *callExpr, args []compiled) (compiled, *Error) {
				unit, err := c.unitArg(x, 2)
				if err != nil {
					return compiled{}, err
				}
				f := &Func{Name: "time_diff", Result: TInt, fn2: func(a, b record.Value) (record.Value, error) {
					if a.Kind() != record.Time {
						return record.Value{}, timeArg("time_diff", a)
					}
					if b.Kind() != record.Time {
						return record.Value{}, timeArg("time_diff", b)
					}
					d := a.Time().Sub(b.Time())
					if d == time.Duration(1<<63-1) || d == time.Duration(-1<<63) {
						return record.Value{}, fnError("time_diff", "the difference is beyond 292 years, which a duration cannot hold")
					}
					return record.IntValue(int64(d) / unit), nil
				}}
				return c.direct(f, args[:2]), nil
			}},
		&Func{Name: "in_zone", Category: "time", Params: []Param{timeP, {Name: "zone", Type: TString, Const: true}}, Result: TTime,
			Doc:     "The same instant in zone (an IANA name, fixed at load): format_time and the part functions then show its wall clock.",
			Example: `hour(in_zone(parse_time("2026-07-01T12:00:00Z"), "America/New_York"))`, Output: `8`,
			build: func(c *compiler, x *callExpr, args []compiled) (compiled, *Error) {
				_, loc, err := c.layoutArgs(&callExpr{x.pos, x.name, []expr{x.args[0], &litExpr{val: sv("rfc3339")}, x.args[1]}}, 1)
				if err != nil {
					return compiled{}, err
				}
				f := &Func{Name: "in_zone", Result: TTime, fn1: func(v record.Value) (record.Value, error) {
					if v.Kind() != record.Time {
						return record.Value{}, timeArg("in_zone", v)
					}
					return record.TimeValue(v.Time().In(loc)), nil
				}}
				return c.direct(f, args[:1]), nil
			}},
		&Func{Name: "duration", Category: "time", Aliases: []string{"parse_duration"}, Params: []Param{{Name: "s", Type: TString | TNull}}, Result: TDuration,
			Doc: "The duration s writes: 1h30m, 250ms, -5s (h, m, s, ms, us, ns). t + duration(\"1h\") adds it to a time.", Example: `string(duration("90m"))`, Output: `"1h30m0s"`,
			fn1: func(v record.Value) (record.Value, error) {
				s, err := str("duration", v)
				if err != nil {
					return record.Value{}, err
				}
				d, perr := time.ParseDuration(s)
				if perr != nil {
					return record.Value{}, fnError("duration", "%q is not a duration such as 1h30m", truncateText(s))
				}
				return record.DurationValue(d), nil
			}},
	)
	part := func(name, doc string, fn func(t time.Time) int, ex, out string) *Func {
		return &Func{Name: name, Category: "time", Params: []Param{timeP}, Result: TInt, Doc: doc, Example: ex, Output: out,
			fn1: func(v record.Value) (record.Value, error) {
				if v.Kind() != record.Time {
					return record.Value{}, timeArg(name, v)
				}
				return record.IntValue(int64(fn(v.Time()))), nil
			}}
	}
	ex := `parse_time("2026-02-01T13:04:05Z")`
	register(
		part("year", "t's year, in t's zone.", func(t time.Time) int { return t.Year() }, "year("+ex+")", "2026"),
		part("month", "t's month, 1 to 12.", func(t time.Time) int { return int(t.Month()) }, "month("+ex+")", "2"),
		part("day", "t's day of the month, 1 to 31.", func(t time.Time) int { return t.Day() }, "day("+ex+")", "1"),
		part("hour", "t's hour, 0 to 23.", func(t time.Time) int { return t.Hour() }, "hour("+ex+")", "13"),
		part("minute", "t's minute, 0 to 59.", func(t time.Time) int { return t.Minute() }, "minute("+ex+")", "4"),
		part("second", "t's second, 0 to 59.", func(t time.Time) int { return t.Second() }, "second("+ex+")", "5"),
		part("weekday", "t's day of the week, 0 (Sunday) to 6.", func(t time.Time) int { return int(t.Weekday()) }, "weekday("+ex+")", "0"),
	)
}

func timeArg(fn string, v record.Value) error {
	if v.IsNull() {
		return nullArg(fn)
	}
	if v.Kind() == record.String {
		return fnError(fn, "%s is a string, not a time: parse it first, as in %s(parse_time(x, \"%%Y-%%m-%%d\"))", show(v), fn)
	}
	return fnError(fn, "%s is %s, not a time", show(v), typeName(v))
}

var units = map[string]int64{"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1, "m": 60e9, "h": 3600e9, "d": 86400e9}

func (c *compiler) unitArg(x *callExpr, i int) (int64, *Error) {
	if len(x.args) <= i {
		return 1e9, nil
	}
	lit, _ := x.args[i].(*litExpr)
	if lit == nil {
		return 0, c.errAt(x.args[i], "%s: the unit must be a constant", x.name)
	}
	u, ok := units[lit.val.Text()]
	if !ok {
		return 0, c.errAt(x.args[i], "%s: unknown unit %q: s, ms, us, ns, m, h or d", x.name, lit.val.Text())
	}
	return u, nil
}

func unitFn(name string, fn func(t time.Time, unit int64) (record.Value, error)) func(c *compiler, x *callExpr, args []compiled) (compiled, *Error) {
	return func(c *compiler, x *callExpr, args []compiled) (compiled, *Error) {
		unit, err := c.unitArg(x, 1)
		if err != nil {
			return compiled{}, err
		}
		if unit > 1e9 {
			return compiled{}, c.errAt(x.args[1], "%s: the unit is s, ms, us or ns", name)
		}
		f := &Func{Name: name, Result: TInt, fn1: func(v record.Value) (record.Value, error) {
			if v.Kind() != record.Time {
				return record.Value{}, timeArg(name, v)
			}
			return fn(v.Time(), unit)
		}}
		return c.direct(f, args[:1]), nil
	}
}

func roundFn(name string, round bool) func(c *compiler, x *callExpr, args []compiled) (compiled, *Error) {
	return func(c *compiler, x *callExpr, args []compiled) (compiled, *Error) {
		unit := args[1].val.Text()
		var fn func(t time.Time) time.Time
		switch unit {
		case "second", "minute", "hour":
			d := map[string]time.Duration{"second": time.Second, "minute": time.Minute, "hour": time.Hour}[unit]
			fn = func(t time.Time) time.Time {
				if round {
					return t.Round(d)
				}
				return t.Truncate(d)
			}
		case "day", "week", "month", "year":
			if round {
				return compiled{}, c.errAt(x.args[1], "%s: %s has no fixed length; round to a duration such as 24h, or truncate_time", name, unit)
			}
			fn = func(t time.Time) time.Time {
				y, m, d := t.Date()
				switch unit {
				case "week":
					d -= (int(t.Weekday()) + 6) % 7
				case "month":
					d = 1
				case "year":
					m, d = 1, 1
				}
				return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
			}
		default:
			d, err := time.ParseDuration(unit)
			if err != nil || d <= 0 {
				return compiled{}, c.errAt(x.args[1], "%s: unknown unit %q: second, minute, hour, day, week, month, year or a duration such as 15m", name, unit)
			}
			fn = func(t time.Time) time.Time {
				if round {
					return t.Round(d)
				}
				return t.Truncate(d)
			}
		}
		f := &Func{Name: name, Result: TTime, fn1: func(v record.Value) (record.Value, error) {
			if v.Kind() != record.Time {
				return record.Value{}, timeArg(name, v)
			}
			return record.TimeValue(fn(v.Time())), nil
		}}
		return c.direct(f, args[:1]), nil
	}
}
