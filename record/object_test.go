package record_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/weir-etl/weir/record"
)

// objStep is one change to an Obj in a sequence: set (name=value), delete
// (-name) or rename (from>to).
func objStep(t *testing.T, o *record.Obj, step string) {
	t.Helper()
	switch {
	case strings.HasPrefix(step, "-"):
		o.Delete(step[1:])
	case strings.Contains(step, ">"):
		from, to, _ := strings.Cut(step, ">")
		o.Rename(from, to)
	default:
		name, val, ok := strings.Cut(step, "=")
		if !ok {
			t.Fatalf("bad step %q", step)
		}
		v, err := record.ParseValue([]byte(val))
		if err != nil {
			t.Fatalf("step %q: %v", step, err)
		}
		o.Set(name, v)
	}
}

// objGets lists what Get gives for names, as name=value or name absent.
func objGets(o *record.Obj, names ...string) []string {
	var out []string
	for _, n := range names {
		if v, ok := o.Get(n); ok {
			out = append(out, n+"="+string(v.AppendJSON(nil)))
		} else {
			out = append(out, n+" absent")
		}
	}
	return out
}

// Guarantee: a sequence of changes to an object is written as Obj
// documents it, and Get reads each member as it now is: a member set twice
// holds the second value, a deleted one is absent even if it was added,
// one set again after a deletion takes its old place, and a renamed member
// keeps the place of the member it came from, through further renames,
// replacing any member of its new name.
func TestObjChangeSequences(t *testing.T) {
	cases := []struct {
		in    string
		steps []string
		want  string
		gets  []string // names to Get, checked against want's members
	}{
		{`{"a":1,"b":2}`, []string{"a=5"}, `{"a":5,"b":2}`, []string{"a", "b"}},
		{`{"a":1,"b":2}`, []string{"a=5", "a=6"}, `{"a":6,"b":2}`, []string{"a"}},
		{`{"a":1,"b":2}`, []string{"x=5", "x=6"}, `{"a":1,"b":2,"x":6}`, []string{"x"}},
		{`{"a":1}`, []string{"x=1", "-x"}, `{"a":1}`, []string{"x"}},
		{`{"a":1}`, []string{"a=2", "-a"}, `{}`, []string{"a"}},
		{`{"a":1}`, []string{"-a", "-a"}, `{}`, []string{"a"}},
		// Set again after a deletion: the place of the member read.
		{`{"x":0,"y":0,"a":1}`, []string{"-a", "a=7"}, `{"x":0,"y":0,"a":7}`, []string{"a"}},
		{`{"x":0,"y":0,"a":1}`, []string{"a=5", "-a", "a=7"}, `{"x":0,"y":0,"a":7}`, []string{"a"}},
		// Renames of members read.
		{`{"a":1,"b":2}`, []string{"a>x", "x>y"}, `{"y":1,"b":2}`, []string{"a", "x", "y"}},
		{`{"a":1,"b":2}`, []string{"a=5", "a>c"}, `{"c":5,"b":2}`, []string{"a", "c"}},
		{`{"a":1,"b":2}`, []string{"x=0", "a>x", "x>y"}, `{"y":1,"b":2}`, []string{"a", "x", "y"}},
		{`{"a":1,"b":2,"c":3}`, []string{"c>a"}, `{"b":2,"a":3}`, []string{"a", "c"}},
		// Renames of members added: they keep their place among the added.
		{`{"a":1}`, []string{"x=1", "y=2", "x>z"}, `{"a":1,"z":1,"y":2}`, []string{"x", "y", "z"}},
		{`{"k":0}`, []string{"to=1", "from=2", "from>to"}, `{"k":0,"to":2}`, []string{"from", "to"}},
		{`{"k":0}`, []string{"from=2", "to=1", "from>to"}, `{"k":0,"to":2}`, []string{"from", "to"}},
		{`{"k":0}`, []string{"a=1", "b=2", "c=3", "c>a"}, `{"k":0,"b":2,"a":3}`, []string{"a", "c"}},
		// An added member renamed over one read: the read one's place is
		// lost, the value goes where it was added.
		{`{"to":1,"b":2,"c":3}`, []string{"x=5", "x>to"}, `{"b":2,"c":3,"to":5}`, []string{"to", "x"}},
		// Renames of what is not there change nothing.
		{`{"a":1}`, []string{"missing>b"}, `{"a":1}`, []string{"b"}},
		{`{"a":1}`, []string{"-a", "a>b"}, `{}`, []string{"a", "b"}},
	}
	for _, c := range cases {
		o, err := record.ParseObj([]byte(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		for _, s := range c.steps {
			objStep(t, o, s)
		}
		if got := string(o.AppendJSON(nil)); got != c.want {
			t.Errorf("%s %v:\n got  %s\n want %s", c.in, c.steps, got, c.want)
		}
		w, err := record.ParseObj([]byte(c.want))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := objGets(o, c.gets...), objGets(w, c.gets...); !slices.Equal(got, want) {
			t.Errorf("%s %v: Get gives %q, want %q", c.in, c.steps, got, want)
		}
	}
}

// Guarantee: Rename reports whether the member it was asked to move
// existed, and renaming a member to its own name changes nothing.
func TestObjRenameReports(t *testing.T) {
	o, err := record.ParseObj([]byte(`{"a":1,"b":2}`))
	if err != nil {
		t.Fatal(err)
	}
	o.Set("n", record.IntValue(3))
	for _, c := range []struct {
		from, to string
		want     bool
	}{
		{"a", "a", true},
		{"z", "z", false},
		{"z", "a", false},
		{"n", "m", true},
		{"n", "o", false},
		{"b", "c", true},
		{"b", "d", false},
	} {
		if got := o.Rename(c.from, c.to); got != c.want {
			t.Errorf("Rename(%s, %s) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
	if got := string(o.AppendJSON(nil)); got != `{"a":1,"c":2,"m":3}` {
		t.Errorf("after the renames: %s", got)
	}
}

// Guarantee: Range gives an object's members as a decoder sees the
// written object: in their written order, each name once (the last of
// duplicates read, at its place, escaped names compared decoded), a set
// member in the place it is written, and it stops when asked to.
func TestObjRangeGivesTheWrittenMembers(t *testing.T) {
	cases := []struct {
		in    string
		steps []string
		want  []string
	}{
		{`{"a":1,"b":2}`, nil, []string{"a=1", "b=2"}},
		{`{"a":1,"b":2,"a":3}`, nil, []string{"b=2", "a=3"}},
		{`{"a":1,"a":2,"a":3}`, nil, []string{"a=3"}},
		{`{"\u0061":1,"a":2}`, nil, []string{"a=2"}},
		{`{"a":1,"\u0061":2,"b":3}`, nil, []string{"a=2", "b=3"}},
		{`{"a\"":1,"b":2}`, nil, []string{`a"=1`, "b=2"}},
		{`{"":0}`, nil, []string{"=0"}},
		{`{}`, nil, nil},
		{`{"a":1,"b":2,"a":3}`, []string{"b=9", "n=0"}, []string{"b=9", "a=3", "n=0"}},
		{`{"a":1,"b":2,"a":3}`, []string{"a=9"}, []string{"b=2", "a=9"}},
		{`{"a":1,"b":2}`, []string{"-a", "n=0"}, []string{"b=2", "n=0"}},
		{`{"a":1,"b":2}`, []string{"a>z"}, []string{"z=1", "b=2"}},
		{`{"a":1,"c":2,"a":3}`, []string{"b=4"}, []string{"c=2", "a=3", "b=4"}},
	}
	for _, c := range cases {
		o, err := record.ParseObj([]byte(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		for _, s := range c.steps {
			objStep(t, o, s)
		}
		var got []string
		o.Range(func(name string, v record.Value) bool {
			got = append(got, name+"="+string(v.AppendJSON(nil)))
			return true
		})
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %v: Range gives %q, want %q", c.in, c.steps, got, c.want)
		}
		for stop := 1; stop <= len(c.want); stop++ {
			calls := 0
			o.Range(func(string, record.Value) bool { calls++; return calls < stop })
			if calls != stop {
				t.Errorf("%s %v: Range asked to stop after %d members went to %d", c.in, c.steps, stop, calls)
			}
		}
	}
}

// Guarantee: an object of up to 16 members is indexed in the Obj itself,
// and an Obj reset to another value reuses what it has: a map that indexes
// every record allocates nothing for it.
func TestObjIndexReusesItsStorage(t *testing.T) {
	var small, large strings.Builder
	small.WriteString("{")
	large.WriteString("{")
	for i := range 40 {
		if i > 0 {
			large.WriteString(",")
			if i < 16 {
				small.WriteString(",")
			}
		}
		m := `"m` + strings.Repeat("x", i) + `":1`
		large.WriteString(m)
		if i < 16 {
			small.WriteString(m)
		}
	}
	small.WriteString("}")
	large.WriteString("}")
	sb, lb := []byte(small.String()), []byte(large.String())
	if n := testing.AllocsPerRun(20, func() {
		if _, err := record.ParseObj(sb); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Errorf("ParseObj of 16 members allocated %v times, want once (the Obj)", n)
	}
	o := record.NewObj()
	for _, b := range [][]byte{sb, lb} {
		if err := o.Reset(b); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(20, func() {
			if err := o.Reset(b); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("Reset to %d bytes allocated %v times, want none", len(b), n)
		}
	}
	if err := o.Reset(nil); err != nil || o.Changed() == false || string(o.AppendJSON(nil)) != "{}" {
		t.Errorf("Reset(nil): %v, %s", err, o.AppendJSON(nil))
	}
}

// Guarantee: the rules of Obj hold in objects of any width: a change to the
// first or last member, or to one on either side of 256 (beyond the
// encoder's buffer on the stack), takes that member's place and leaves
// every other member as it was; Range agrees.
func TestObjWideChanges(t *testing.T) {
	for _, n := range []int{1, 2, 63, 64, 65, 128, 129, 300} {
		name := func(i int) string { return "m" + strconv.Itoa(i) }
		value := func(i int) string { return "[" + strconv.Itoa(i) + "]" }
		var in strings.Builder
		in.WriteString("{")
		for i := range n {
			if i > 0 {
				in.WriteString(",")
			}
			in.WriteString(`"` + name(i) + `":` + value(i))
		}
		in.WriteString("}")
		targets := []int{0, n - 1, n / 2, 62, 63, 64, 65, 127, 128, 255, 256, 257}
		for _, at := range targets {
			if at >= n {
				continue
			}
			for _, op := range []string{"set", "delete", "rename", "rename over"} {
				o, err := record.ParseObj([]byte(in.String()))
				if err != nil {
					t.Fatal(err)
				}
				var want, ranged []string
				over := (at + 1) % n // the member "rename over" replaces
				switch op {
				case "set":
					o.Set(name(at), record.StringValue("new"))
				case "delete":
					o.Delete(name(at))
				case "rename":
					o.Rename(name(at), "renamed")
				case "rename over":
					o.Rename(name(at), name(over))
				}
				for i := range n {
					switch {
					case i != at && !(op == "rename over" && i == over):
						want = append(want, `"`+name(i)+`":`+value(i))
						ranged = append(ranged, name(i)+"="+value(i))
					case op == "set":
						want = append(want, `"`+name(i)+`":"new"`)
						ranged = append(ranged, name(i)+`="new"`)
					case op == "rename" || op == "rename over" && i == at && n > 1:
						to := "renamed"
						if op == "rename over" {
							to = name(over)
						}
						want = append(want, `"`+to+`":`+value(at))
						ranged = append(ranged, to+"="+value(at))
					case op == "rename over" && n == 1:
						want = append(want, `"`+name(i)+`":`+value(i))
						ranged = append(ranged, name(i)+"="+value(i))
					}
				}
				w := "{" + strings.Join(want, ",") + "}"
				if got := string(o.AppendJSON(nil)); got != w {
					t.Errorf("%d members, %s of member %d: got\n%s\nwant\n%s", n, op, at, got, w)
				}
				var got []string
				o.Range(func(name string, v record.Value) bool {
					got = append(got, name+"="+string(v.AppendJSON(nil)))
					return true
				})
				if !slices.Equal(got, ranged) {
					t.Errorf("%d members, %s of member %d: Range gives %q, want %q", n, op, at, got, ranged)
				}
			}
		}
	}
}
