package preflight

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDir(t *testing.T) {
	d := t.TempDir()
	file := filepath.Join(d, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ro := filepath.Join(d, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir, want string
	}{
		{d, ""},
		{filepath.Join(d, "new", "deeper"), ""},
		{file, "is a file, not a directory"},
		{filepath.Join(file, "st"), "cannot be created: " + file + " is a file"},
	} {
		err := Dir(c.dir)
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Dir(%s) = %v, want %q", c.dir, err, c.want)
		}
	}
	if os.Geteuid() != 0 { // root may write anywhere
		if err := Dir(filepath.Join(ro, "x")); err == nil || !strings.Contains(err.Error(), "not writable") {
			t.Errorf("Dir under a read-only directory = %v, want not writable", err)
		}
	}
}

func TestFile(t *testing.T) {
	d := t.TempDir()
	f := filepath.Join(d, "f")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := File(f); err != nil {
		t.Errorf("File(regular) = %v", err)
	}
	if err := File(d); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("File(dir) = %v", err)
	}
	if err := File(filepath.Join(d, "none")); err == nil || !strings.Contains(err.Error(), "cannot be read: no such file") {
		t.Errorf("File(missing) = %v", err)
	}
}
