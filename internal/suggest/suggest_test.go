package suggest

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"orders", "refunds", "metrics"}
	for _, c := range []struct{ in, want string }{
		{"order", "orders"},
		{"ORDERS", ""}, // the same name: not a misspelling of it
		{"orders", ""},
		{"metric", "metrics"},
		{"refnuds", "refunds"}, // a swap is one edit
		{"payments", ""},       // too far from every name to be a typo
		{"", ""},
	} {
		if got := Closest(c.in, names); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestClosestOptionsAndTypes holds the cases of misleading suggestions seen
// in error messages: a four-letter word three edits from the only nearby
// name, and the transposed and truncated spellings that should be found.
func TestClosestOptionsAndTypes(t *testing.T) {
	for _, c := range []struct {
		in    string
		names []string
		want  string
	}{
		{"nope", []string{"file", "generate", "kafka", "postgres_cdc"}, ""},
		{"fiel", []string{"file", "generate", "kafka"}, "file"},
		{"pahts", []string{"paths", "mode", "data_dir"}, "paths"},
		{"on_failur", []string{"on_failure", "inputs"}, "on_failure"},
		{"routes", []string{"inputs", "outputs", "type"}, ""},
		{"in.put", []string{"in.put", "in"}, ""},
		{"kafak", []string{"kafka", "file"}, "kafka"},
	} {
		if got := Closest(c.in, c.names); got != c.want {
			t.Errorf("Closest(%q, %q) = %q, want %q", c.in, c.names, got, c.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "ab", 2}, {"abc", "abc", 0},
		{"ab", "ba", 1}, {"abcd", "acbd", 1}, {"kitten", "sitting", 3},
		{"nope", "file", 3}, {"ca", "abc", 3},
	} {
		if got := distance(c.a, c.b); got != c.want {
			t.Errorf("distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := distance(c.b, c.a); got != c.want {
			t.Errorf("distance(%q, %q) = %d, want %d", c.b, c.a, got, c.want)
		}
	}
}
