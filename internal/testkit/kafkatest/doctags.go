package kafkatest

import (
	"reflect"
	"strings"
	"testing"
)

// CheckDocTags fails t for every option of the configuration struct typ (and
// of the structs it nests or inlines) without a `doc` tag: `weir help` and the
// schema are generated from them.
func CheckDocTags(t testing.TB, typ reflect.Type) {
	t.Helper()
	checkDocTags(t, typ, "")
}

func checkDocTags(t testing.TB, typ reflect.Type, prefix string) {
	t.Helper()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if strings.Contains(","+opts+",", ",inline,") {
			checkDocTags(t, f.Type, prefix)
			continue
		}
		if name == "" {
			t.Errorf("%s%s has no yaml name", prefix, f.Name)
			continue
		}
		if doc := f.Tag.Get("doc"); strings.TrimSpace(doc) == "" {
			t.Errorf("option %s%s has no doc tag", prefix, name)
		}
		if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() != "time" {
			checkDocTags(t, f.Type, prefix+name+".")
		}
	}
}
