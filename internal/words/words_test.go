package words

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{Plural(0, "record"), "0 records"},
		{Plural(1, "record"), "1 record"},
		{Plural(int64(2), "chunk"), "2 chunks"},
		{Plural(-1, "byte"), "-1 byte"},
		{Count(1, "batch", "batches"), "1 batch"},
		{Count(int32(3), "batch", "batches"), "3 batches"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
