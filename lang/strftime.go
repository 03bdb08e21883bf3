package lang

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// A time layout, compiled once at load: a named format (rfc3339, unix_ms,
// ...), a strftime layout (%Y-%m-%d) or a Go reference layout
// (2006-01-02). Formatting appends to a buffer and parsing builds a
// time.Time, neither allocating for strftime and the numeric layouts (a
// zone offset that is not a whole quarter of an hour aside).
type layout struct {
	name string
	goL  string   // a Go layout
	unit int64    // a Unix layout: nanoseconds per unit
	ops  []strfOp // a strftime layout
	// date and clock say whether the strftime directives need the date
	// and the time of day, each a computation of its own.
	date, clock bool
}

type strfOp struct {
	verb byte   // 0 for a literal
	lit  string // with verb 0
}

var namedLayouts = map[string]string{
	"rfc3339": time.RFC3339, "rfc3339nano": time.RFC3339Nano, "iso8601": time.RFC3339,
	"rfc1123": time.RFC1123, "rfc1123z": time.RFC1123Z, "rfc822": time.RFC822, "rfc822z": time.RFC822Z,
	"rfc850": time.RFC850, "ansic": time.ANSIC, "unixdate": time.UnixDate, "kitchen": time.Kitchen,
	"date": time.DateOnly, "datetime": time.DateTime, "time": time.TimeOnly,
}

var unixLayouts = map[string]int64{"unix": 1e9, "unix_s": 1e9, "unix_ms": 1e6, "unix_us": 1e3, "unix_ns": 1}

// LayoutNames lists the named layouts, for the reference.
var LayoutNames = "rfc3339 (the default), rfc3339nano, iso8601, rfc1123, rfc1123z, rfc822, rfc822z, rfc850, ansic, unixdate, kitchen, date (2006-01-02), datetime (2006-01-02 15:04:05), time (15:04:05), unix (seconds), unix_ms, unix_us, unix_ns"

const strfVerbs = "YCymdejHkIlMSLfNpPaAbhBZzsuwFTDRnt%GV"

func compileLayout(s string) (*layout, error) {
	if g, ok := namedLayouts[s]; ok {
		return &layout{name: s, goL: g}, nil
	}
	if u, ok := unixLayouts[s]; ok {
		return &layout{name: s, unit: u}, nil
	}
	if !strings.Contains(s, "%") {
		if !strings.ContainsAny(s, "0123456789") {
			return nil, fmt.Errorf("unknown layout %q: a name (%s), a strftime layout such as %%Y-%%m-%%d, or a Go layout such as 2006-01-02", s, LayoutNames)
		}
		return &layout{name: s, goL: s}, nil
	}
	l := &layout{name: s}
	lit := ""
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			lit += string(s[i])
			continue
		}
		if i+1 >= len(s) {
			return nil, fmt.Errorf("layout %q ends with a lone %%", s)
		}
		v := s[i+1]
		i++
		if v == ':' && i+1 < len(s) && s[i+1] == 'z' {
			v = 'Z' + 1 // %:z, an offset with a colon
			i++
		} else if !strings.ContainsRune(strfVerbs, rune(v)) {
			return nil, fmt.Errorf("layout %q: unknown directive %%%c (known: %%Y %%m %%d %%H %%M %%S %%f %%L %%N %%z %%:z %%Z %%j %%a %%A %%b %%B %%p %%y %%e %%s %%F %%T and more; docs/expressions.md lists them)", s, v)
		}
		switch v {
		case '%':
			lit += "%"
			continue
		case 'n':
			lit += "\n"
			continue
		case 't':
			lit += "\t"
			continue
		}
		if lit != "" {
			l.ops = append(l.ops, strfOp{lit: lit})
			lit = ""
		}
		switch v { // composites
		case 'F':
			l.ops = append(l.ops, strfOp{verb: 'Y'}, strfOp{lit: "-"}, strfOp{verb: 'm'}, strfOp{lit: "-"}, strfOp{verb: 'd'})
		case 'T':
			l.ops = append(l.ops, strfOp{verb: 'H'}, strfOp{lit: ":"}, strfOp{verb: 'M'}, strfOp{lit: ":"}, strfOp{verb: 'S'})
		case 'R':
			l.ops = append(l.ops, strfOp{verb: 'H'}, strfOp{lit: ":"}, strfOp{verb: 'M'})
		case 'D':
			l.ops = append(l.ops, strfOp{verb: 'm'}, strfOp{lit: "/"}, strfOp{verb: 'd'}, strfOp{lit: "/"}, strfOp{verb: 'y'})
		default:
			l.ops = append(l.ops, strfOp{verb: v})
		}
	}
	if lit != "" {
		l.ops = append(l.ops, strfOp{lit: lit})
	}
	for _, op := range l.ops {
		l.date = l.date || strings.ContainsRune("YCymdebhB", rune(op.verb))
		l.clock = l.clock || strings.ContainsRune("HkIlMSpP", rune(op.verb))
	}
	return l, nil
}

const colonZ = 'Z' + 1

var (
	longDays   = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	longMonths = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
)

func pad(dst []byte, n, width int) []byte {
	switch { // the common widths, without the loop
	case width == 2 && n >= 0 && n < 100:
		return append(dst, byte('0'+n/10), byte('0'+n%10))
	case width == 4 && n >= 0 && n < 10000:
		return append(dst, byte('0'+n/1000), byte('0'+n/100%10), byte('0'+n/10%10), byte('0'+n%10))
	}
	if n < 0 {
		dst = append(dst, '-')
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 || i == len(b) {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	for len(b)-i < width {
		i--
		b[i] = '0'
	}
	return append(dst, b[i:]...)
}

// appendTime appends t formatted by l.
func (l *layout) appendTime(dst []byte, t time.Time) []byte {
	switch {
	case l.unit != 0:
		return strconv.AppendInt(dst, floorDiv(t.UnixNano(), l.unit, t), 10)
	case l.goL != "":
		return t.AppendFormat(dst, l.goL)
	}
	var year, day, hour, min, sec int
	var month time.Month
	if l.date {
		year, month, day = t.Date()
	}
	if l.clock {
		hour, min, sec = t.Clock()
	}
	for _, op := range l.ops {
		switch op.verb {
		case 0:
			dst = append(dst, op.lit...)
		case 'Y':
			dst = pad(dst, year, 4)
		case 'C':
			dst = pad(dst, year/100, 2)
		case 'y':
			dst = pad(dst, year%100, 2)
		case 'G':
			y, _ := t.ISOWeek()
			dst = pad(dst, y, 4)
		case 'V':
			_, w := t.ISOWeek()
			dst = pad(dst, w, 2)
		case 'm':
			dst = pad(dst, int(month), 2)
		case 'd':
			dst = pad(dst, day, 2)
		case 'e':
			if day < 10 {
				dst = append(dst, ' ')
			}
			dst = pad(dst, day, 1)
		case 'j':
			dst = pad(dst, t.YearDay(), 3)
		case 'H':
			dst = pad(dst, hour, 2)
		case 'k':
			if hour < 10 {
				dst = append(dst, ' ')
			}
			dst = pad(dst, hour, 1)
		case 'I', 'l':
			h := hour % 12
			if h == 0 {
				h = 12
			}
			if op.verb == 'l' && h < 10 {
				dst = append(dst, ' ')
				dst = pad(dst, h, 1)
			} else {
				dst = pad(dst, h, 2)
			}
		case 'M':
			dst = pad(dst, min, 2)
		case 'S':
			dst = pad(dst, sec, 2)
		case 'L':
			dst = pad(dst, t.Nanosecond()/1e6, 3)
		case 'f':
			dst = pad(dst, t.Nanosecond()/1e3, 6)
		case 'N':
			dst = pad(dst, t.Nanosecond(), 9)
		case 'p', 'P':
			am := "AM"
			if hour >= 12 {
				am = "PM"
			}
			if op.verb == 'P' {
				am = strings.ToLower(am)
			}
			dst = append(dst, am...)
		case 'a':
			dst = append(dst, longDays[t.Weekday()][:3]...)
		case 'A':
			dst = append(dst, longDays[t.Weekday()]...)
		case 'b', 'h':
			dst = append(dst, longMonths[month-1][:3]...)
		case 'B':
			dst = append(dst, longMonths[month-1]...)
		case 'u':
			wd := int(t.Weekday())
			if wd == 0 {
				wd = 7
			}
			dst = pad(dst, wd, 1)
		case 'w':
			dst = pad(dst, int(t.Weekday()), 1)
		case 's':
			dst = strconv.AppendInt(dst, t.Unix(), 10)
		case 'Z':
			name, _ := t.Zone()
			dst = append(dst, name...)
		case 'z', colonZ:
			_, off := t.Zone()
			sign := byte('+')
			if off < 0 {
				sign, off = '-', -off
			}
			dst = append(dst, sign)
			dst = pad(dst, off/3600, 2)
			if op.verb == colonZ {
				dst = append(dst, ':')
			}
			dst = pad(dst, off%3600/60, 2)
		}
	}
	return dst
}

func floorDiv(ns, unit int64, t time.Time) int64 {
	if unit == 1e9 {
		return t.Unix()
	}
	if unit == 1e6 {
		return t.UnixMilli()
	}
	if unit == 1e3 {
		return t.UnixMicro()
	}
	return ns
}

var errLayout = errors.New("does not match the layout")

// parse reads s by l. A time without a zone is in loc.
func (l *layout) parse(s string, loc *time.Location) (time.Time, error) {
	switch {
	case l.unit != 0:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q is not an integer count of %s", s, l.name)
		}
		return fromUnix(n, l.unit)
	case l.goL != "":
		return time.ParseInLocation(l.goL, s, loc)
	}
	year, month, day, hour, min, sec, nsec := 1970, 1, 1, 0, 0, 0, 0
	pm, hasPM, hour12 := false, false, false
	var zone *time.Location
	unix, hasUnix := int64(0), false
	yday := 0
	i := 0
	num := func(width int) (int, bool) {
		j, n := i, 0
		neg := false
		if j < len(s) && (s[j] == '-' || s[j] == '+') && width >= 4 {
			neg = s[j] == '-'
			j++
		}
		start := j
		for j < len(s) && j-start < width && s[j] >= '0' && s[j] <= '9' {
			n = n*10 + int(s[j]-'0')
			j++
		}
		if j == start {
			return 0, false
		}
		i = j
		if neg {
			n = -n
		}
		return n, true
	}
	name := func(names []string, short bool) (int, bool) {
		for k, n := range names {
			if short {
				n = n[:3]
			}
			if len(s)-i >= len(n) && strings.EqualFold(s[i:i+len(n)], n) {
				i += len(n)
				return k, true
			}
		}
		return 0, false
	}
	var ok bool
	for _, op := range l.ops {
		switch op.verb {
		case 0:
			if !strings.HasPrefix(s[i:], op.lit) {
				return time.Time{}, errLayout
			}
			i += len(op.lit)
			continue
		case 'Y', 'G':
			year, ok = num(4)
		case 'C':
			var c int
			c, ok = num(2)
			year = c*100 + year%100
		case 'y':
			var y int
			y, ok = num(2)
			year = 1900 + y
			if y < 69 {
				year = 2000 + y
			}
		case 'm':
			month, ok = num(2)
		case 'd':
			day, ok = num(2)
		case 'e':
			if i < len(s) && s[i] == ' ' {
				i++
			}
			day, ok = num(2)
		case 'j':
			yday, ok = num(3)
		case 'H', 'k':
			if op.verb == 'k' && i < len(s) && s[i] == ' ' {
				i++
			}
			hour, ok = num(2)
		case 'I', 'l':
			if op.verb == 'l' && i < len(s) && s[i] == ' ' {
				i++
			}
			hour, ok = num(2)
			hour12 = true
		case 'M':
			min, ok = num(2)
		case 'S':
			sec, ok = num(2)
		case 'L', 'f', 'N':
			start := i
			var n int
			n, ok = num(9)
			for k := i - start; k < 9; k++ {
				n *= 10
			}
			nsec = n
		case 'p', 'P':
			ok = len(s)-i >= 2
			if ok {
				switch strings.ToUpper(s[i : i+2]) {
				case "AM":
				case "PM":
					pm = true
				default:
					ok = false
				}
				hasPM = true
				i += 2
			}
		case 'a':
			_, ok = name(longDays, true)
		case 'A':
			_, ok = name(longDays, false)
		case 'b', 'h':
			var m int
			m, ok = name(longMonths, true)
			month = m + 1
		case 'B':
			var m int
			m, ok = name(longMonths, false)
			month = m + 1
		case 'u', 'w', 'V':
			_, ok = num(2)
		case 's':
			start := i
			if i < len(s) && s[i] == '-' {
				i++
			}
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			var err error
			unix, err = strconv.ParseInt(s[start:i], 10, 64)
			ok, hasUnix = err == nil, true
		case 'Z':
			switch {
			case strings.HasPrefix(s[i:], "UTC"), strings.HasPrefix(s[i:], "GMT"):
				zone, i, ok = time.UTC, i+3, true
			case strings.HasPrefix(s[i:], "Z"):
				zone, i, ok = time.UTC, i+1, true
			default:
				return time.Time{}, fmt.Errorf("zone names other than UTC, GMT and Z are ambiguous: parse with %%z (+0100)")
			}
		case 'z', colonZ:
			zone, ok = parseOffset(s, &i)
		}
		if !ok {
			return time.Time{}, errLayout
		}
	}
	if i != len(s) {
		return time.Time{}, fmt.Errorf("text after the layout: %q", s[i:])
	}
	if hasUnix {
		return time.Unix(unix, int64(nsec)).In(orUTC(zone, loc)), nil
	}
	if hour12 {
		if hour < 1 || hour > 12 {
			return time.Time{}, fmt.Errorf("hour %d is not 1 to 12", hour)
		}
		hour %= 12
		if pm {
			hour += 12
		}
	} else if hasPM && pm && hour < 12 {
		hour += 12
	}
	if month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60 {
		return time.Time{}, fmt.Errorf("a field is out of range")
	}
	if day > daysIn(time.Month(month), year) {
		return time.Time{}, fmt.Errorf("%d-%02d has no day %d", year, month, day)
	}
	t := time.Date(year, time.Month(month), day, hour, min, sec, nsec, orUTC(zone, loc))
	if yday > 0 {
		t = time.Date(year, 1, yday, hour, min, sec, nsec, orUTC(zone, loc))
	}
	return t, nil
}

func orUTC(zone, loc *time.Location) *time.Location {
	if zone != nil {
		return zone
	}
	return loc
}

func daysIn(m time.Month, year int) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// zones caches the fixed zones of whole quarters of an hour from -14h to
// +14h, so that parsing an offset allocates no Location.
var zones [113]atomic.Pointer[time.Location]

func fixedZone(off int) *time.Location {
	if off == 0 {
		return time.UTC
	}
	if off%900 != 0 || off < -14*3600 || off > 14*3600 {
		return time.FixedZone("", off)
	}
	k := off/900 + 56
	if z := zones[k].Load(); z != nil {
		return z
	}
	z := time.FixedZone("", off)
	zones[k].Store(z)
	return z
}

func parseOffset(s string, i *int) (*time.Location, bool) {
	j := *i
	if j < len(s) && s[j] == 'Z' {
		*i = j + 1
		return time.UTC, true
	}
	if j >= len(s) || s[j] != '+' && s[j] != '-' {
		return nil, false
	}
	neg := s[j] == '-'
	j++
	digits := func(n int) (int, bool) {
		if j+n > len(s) {
			return 0, false
		}
		v := 0
		for k := 0; k < n; k++ {
			c := s[j+k]
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		j += n
		return v, true
	}
	h, ok := digits(2)
	if !ok {
		return nil, false
	}
	if j < len(s) && s[j] == ':' {
		j++
	}
	m, ok := digits(2)
	if !ok {
		return nil, false
	}
	off := h*3600 + m*60
	if neg {
		off = -off
	}
	*i = j
	return fixedZone(off), true
}

func fromUnix(n, unit int64) (time.Time, error) {
	switch unit {
	case 1e9:
		return time.Unix(n, 0).UTC(), nil
	case 1e6:
		return time.UnixMilli(n).UTC(), nil
	case 1e3:
		return time.UnixMicro(n).UTC(), nil
	}
	return time.Unix(0, n).UTC(), nil
}
