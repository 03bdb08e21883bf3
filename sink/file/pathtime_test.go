package file

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
)

// chunkDirs returns the directories of the visible chunks under dir, sorted.
func chunkDirs(t *testing.T, dir string) []string {
	t.Helper()
	vis, _ := files(t, dir)
	var dirs []string
	for _, v := range vis {
		dirs = append(dirs, filepath.ToSlash(filepath.Dir(v)))
	}
	slices.Sort(dirs)
	return slices.Compact(dirs)
}

// The date placeholders show the processing time by default, and the
// record's own time or a field's time when template_time says so: records
// of two days written on a third go under their own days.
func TestTemplateTime(t *testing.T) {
	written := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	vals := []string{`{"ts":"2026-02-01T23:30:00Z"}`, `{"ts":"2026-02-01T23:30:00-05:00"}`, `{"ts":"2026-02-02"}`}
	for _, tc := range []struct {
		name     string
		mutate   func(*Config)
		recTimes bool // give the records times of their own: the ts values
		want     string
	}{
		{"processing", func(c *Config) {}, true, "2026-03-04"},
		{"record", func(c *Config) { c.TemplateTime = "record" }, true, "2026-02-01 2026-02-02"},
		{"field", func(c *Config) { c.TemplateTime, c.TemplateTimeField = "field", "ts" }, false, "2026-02-01 2026-02-02"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, dir := newSink(t, func(c *Config) { c.Template = "{{.Date}}/p"; tc.mutate(c) })
			s.now = func() time.Time { return written }
			rs := recs(vals...)
			if tc.recTimes {
				rs[0].Time = time.Date(2026, 2, 1, 23, 30, 0, 0, time.UTC)
				rs[1].Time = time.Date(2026, 2, 2, 4, 30, 0, 0, time.UTC)
				rs[2].Time = time.Date(2026, 2, 2, 0, 0, 0, 0, time.UTC)
			}
			if err := s.Write(ctx, rs); err != nil {
				t.Fatal(err)
			}
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(chunkDirs(t, dir), " "); got != tc.want {
				t.Errorf("chunk directories %q, want %q", got, tc.want)
			}
		})
	}
}

// A record without the time its path needs is rejected, naming what is
// missing, and the records before it were accepted.
func TestTemplateTimeMissing(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*Config)
		val    string
		want   string
	}{
		{func(c *Config) { c.TemplateTime = "record" }, `{"ts":"2026-02-01"}`, "has no time of its own"},
		{func(c *Config) { c.TemplateTime, c.TemplateTimeField = "field", "ts" }, `{"id":1}`, `"ts" is missing`},
		{func(c *Config) { c.TemplateTime, c.TemplateTimeField = "field", "ts" }, `{"ts":1738442837}`, "the number 1738442837"},
		{func(c *Config) { c.TemplateTime, c.TemplateTimeField = "field", "ts" }, `{"ts":"yesterday"}`, `"yesterday", not an RFC 3339 time`},
	} {
		s, _ := newSink(t, func(c *Config) { c.Template = "{{.Date}}/p"; tc.mutate(c) })
		ok := recs(`{"ts":"2026-02-01T00:00:00Z"}`)
		ok[0].Time = time.Now()
		err := s.Write(ctx, append(ok, recs(tc.val)...))
		var rej *connector.RejectError
		if !errors.As(err, &rej) || rej.Index != 1 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want record 1 rejected with %q", tc.val, err, tc.want)
		}
	}
}

// template_time and template_time_field go together, and are checked with
// every other option at once.
func TestTemplateTimeConfig(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*Config)
		want   []string
	}{
		{func(c *Config) { c.TemplateTime = "event" }, []string{"template_time: \"event\" is unknown"}},
		{func(c *Config) { c.TemplateTime = "field" }, []string{"template_time_field: is empty"}},
		{func(c *Config) { c.TemplateTimeField = "ts" }, []string{"template_time_field: is only for template_time: field"}},
		{func(c *Config) { c.TemplateTime, c.Format, c.MaxAge = "field", "csv", 0 }, []string{"template_time_field", "format", "max_age"}},
	} {
		c := NewConfig()
		c.Path = "out"
		tc.mutate(c)
		err := c.Validate()
		fields, _ := connector.FieldErrors(err)
		if len(fields) != len(tc.want) {
			t.Errorf("%v: %d field errors, want %d", err, len(fields), len(tc.want))
		}
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v, want %q", err, w)
			}
		}
	}
}
