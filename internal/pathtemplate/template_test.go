package pathtemplate

import (
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/record"
)

// A template renders dates of the time given and field values made safe
// for one path level; one that could leave its root is refused.
func TestRender(t *testing.T) {
	tp, err := Parse(`dt={{.Date}}/{{field "region"}}/part`)
	if err != nil {
		t.Fatal(err)
	}
	if !tp.HasFields || !tp.HasTime {
		t.Fatalf("HasFields %v HasTime %v, want both", tp.HasFields, tp.HasTime)
	}
	r := record.New([]byte(`{"region":"eu/west","n":1}`))
	got, err := tp.Render(nil, time.Date(2026, 2, 1, 3, 0, 0, 0, time.UTC), &r)
	if err != nil || string(got) != "dt=2026-02-01/eu_west/part" {
		t.Fatalf("Render = %q, %v", got, err)
	}
	for _, bad := range []string{"/abs/part", "a/../part", "dir/", "{{.Nope}}", "{{.Date"} {
		if _, err := Parse(bad); err == nil || !strings.HasPrefix(err.Error(), "pathtemplate: ") {
			t.Errorf("Parse(%q) = %v, want a pathtemplate error", bad, err)
		}
	}
	tm := NewTime("field", "ts")
	rt := record.New([]byte(`{"ts":"2026-02-01T23:30:00-05:00"}`))
	if at, err := tm.Of(&rt, time.Time{}); err != nil || !at.Equal(time.Date(2026, 2, 2, 4, 30, 0, 0, time.UTC)) {
		t.Fatalf("Of = %v, %v", at, err)
	}
}
