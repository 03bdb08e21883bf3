package record_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/weir-etl/weir/record"
)

// Guarantee: the value is decoded lazily, on the first Fields call, and at
// most once: changing the bytes afterwards is not seen, because Fields does
// not decode again.
func TestFieldsDecodesLazilyAtMostOnce(t *testing.T) {
	v := []byte(`{"id":1,"name":"ada"}`)
	r := record.New(v)
	if r.Decoded() {
		t.Fatal("decoded before Fields was called")
	}
	got, err := r.Value()
	if err != nil || string(got) != string(v) || r.Decoded() {
		t.Fatalf("Value = %s, %v, decoded %v; want the bytes, undecoded", got, err, r.Decoded())
	}
	f1, err := r.Fields()
	if err != nil || !r.Decoded() || f1["name"] != "ada" {
		t.Fatalf("Fields = %v, %v, decoded %v", f1, err, r.Decoded())
	}
	copy(v, `{"id":2,"name":"bob"}`) // same length; a second decode would see it
	f2, err := r.Fields()
	if err != nil || f2["name"] != "ada" || f2["id"] != 1.0 {
		t.Fatalf("second Fields = %v, %v: decoded again", f2, err)
	}
	if reflect.ValueOf(f1).Pointer() != reflect.ValueOf(f2).Pointer() {
		t.Error("second Fields returned a new map")
	}
}

func TestFieldsErrorsAreRemembered(t *testing.T) {
	for _, tc := range []struct {
		value  string
		isNotO bool
	}{{`{"id":`, false}, {`[1,2]`, true}, {`"text"`, true}} {
		r := record.New([]byte(tc.value))
		_, err1 := r.Fields()
		_, err2 := r.Fields()
		if err1 == nil || err1 != err2 {
			t.Errorf("%s: Fields errors %v then %v, want the same error twice", tc.value, err1, err2)
		}
		if errors.Is(err1, record.ErrNotObject) != tc.isNotO {
			t.Errorf("%s: error %v, ErrNotObject %v", tc.value, err1, tc.isNotO)
		}
		if r.Decoded() {
			t.Errorf("%s: Decoded after a failed decode", tc.value)
		}
		if v, err := r.Value(); err != nil || string(v) != tc.value {
			t.Errorf("%s: Value = %s, %v; want the bytes unchanged", tc.value, v, err)
		}
	}
}

// Guarantee: changed fields are re-encoded by Value, and unchanged ones are
// not (the original bytes come back as they were).
func TestValueReencodesChangedFields(t *testing.T) {
	orig := `{"b":1,  "a":2}`
	r := record.New([]byte(orig))
	f, _ := r.Fields()
	if v, _ := r.Value(); string(v) != orig {
		t.Errorf("Value of unchanged fields = %s, want the original bytes %s", v, orig)
	}
	f["c"] = "x"
	if v, _ := r.Value(); string(v) != orig {
		t.Errorf("Value before MarkChanged = %s, want the original bytes", v)
	}
	r.MarkChanged()
	if v, err := r.Value(); err != nil || string(v) != `{"a":2,"b":1,"c":"x"}` {
		t.Errorf("Value after MarkChanged = %s, %v", v, err)
	}
	if !r.Decoded() {
		t.Error("not decoded after re-encoding")
	}

	r.SetFields(map[string]any{"n": 1, "s": []any{"a"}})
	if v, err := r.Value(); err != nil || string(v) != `{"n":1,"s":["a"]}` {
		t.Errorf("Value after SetFields = %s, %v", v, err)
	}
	r.SetFields(map[string]any{"bad": func() {}})
	if _, err := r.Value(); err == nil {
		t.Error("Value of unencodable fields: no error")
	}
	r.SetValue([]byte(`{"z":0}`))
	if r.Decoded() {
		t.Error("decoded after SetValue")
	}
	if f, err := r.Fields(); err != nil || f["z"] != 0.0 {
		t.Errorf("Fields after SetValue = %v, %v", f, err)
	}
}

// Guarantee: CloneData copies fields deeply (changing one record's nested
// fields never changes the other's), shares the bytes, and carries no
// reference.
func TestCloneDataIsIndependent(t *testing.T) {
	r := record.New([]byte(`{"user":{"tags":["a","b"],"age":3},"n":1}`))
	r.Key = []byte("k")
	r.Origin = record.Origin{Source: "s", Partition: "p", Offset: 7}
	f, _ := r.Fields()
	c := r.CloneData()
	if !c.Ack.IsZero() {
		t.Error("clone carries a reference")
	}
	if string(c.Key) != "k" || c.Origin != r.Origin {
		t.Errorf("clone metadata %q %+v", c.Key, c.Origin)
	}
	cf, err := c.Fields()
	if err != nil || !c.Decoded() {
		t.Fatalf("clone Fields: %v, decoded %v", err, c.Decoded())
	}
	cf["n"] = 2.0
	cf["user"].(map[string]any)["age"] = 4.0
	cf["user"].(map[string]any)["tags"].([]any)[0] = "z"
	c.MarkChanged()
	want := map[string]any{"user": map[string]any{"tags": []any{"a", "b"}, "age": 3.0}, "n": 1.0}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("original fields changed through the clone: %v", f)
	}
	if v, _ := r.Value(); string(v) != `{"user":{"tags":["a","b"],"age":3},"n":1}` {
		t.Errorf("original value %s", v)
	}
	var cv map[string]any
	b, _ := c.Value()
	if err := json.Unmarshal(b, &cv); err != nil || cv["n"] != 2.0 {
		t.Errorf("clone value %s", b)
	}

	// An undecoded record's clone decodes on its own.
	u := record.New([]byte(`{"x":1}`))
	uc := u.CloneData()
	ucf, _ := uc.Fields()
	ucf["x"] = 5.0
	if u.Decoded() {
		t.Error("decoding the clone decoded the original")
	}
	if uf, _ := u.Fields(); uf["x"] != 1.0 {
		t.Errorf("original sees the clone's change: %v", uf)
	}
}

func TestSize(t *testing.T) {
	r := record.New(make([]byte, 100))
	if got := r.Size(); got != 164 {
		t.Errorf("Size = %d, want 100 bytes of value plus 64 of overhead", got)
	}
	r.Key = make([]byte, 10)
	r.Headers = []record.Header{{Key: "abc", Value: make([]byte, 7)}, {Key: "d", Value: nil}}
	if got := r.Size(); got != 164+10+10+1 {
		t.Errorf("Size = %d, want value, key, header keys and values plus 64", got)
	}
	var empty record.Record
	if got := empty.Size(); got != 64 {
		t.Errorf("Size of an empty record = %d, want 64", got)
	}
}
