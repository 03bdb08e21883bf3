package kafkaclient

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
)

// Validate reports every problem at once, each as a FieldError naming its
// YAML option.
func TestConnValidateAllAtOnce(t *testing.T) {
	c := DefaultConn()
	c.Brokers = []string{"ok:9092", "nohost", " "}
	c.ConnectTimeout = 10 * time.Millisecond
	c.TLS.CertFile = "c.pem"
	c.SASL.Mechanism = "gssapi"
	fields, other := connector.FieldErrors(c.Validate())
	if len(other) != 0 {
		t.Fatalf("errors that name no option: %v", other)
	}
	var got []string
	for _, f := range fields {
		got = append(got, f.Field)
	}
	want := []string{"brokers[1]", "brokers[2]", "connect_timeout", "tls.key_file", "sasl.mechanism"}
	if !slices.Equal(got, want) {
		t.Fatalf("fields %v, want %v", got, want)
	}

	for _, tc := range []struct {
		field  string
		change func(*Conn)
	}{
		{"brokers", func(c *Conn) { c.Brokers = nil }},
		{"tls.cert_file", func(c *Conn) { c.TLS.KeyFile = "k.pem" }},
		{"sasl.username", func(c *Conn) { c.SASL.Mechanism = "plain" }},
		{"sasl.mechanism", func(c *Conn) { c.SASL.Password = "x" }},
	} {
		c := DefaultConn()
		c.Brokers = []string{"127.0.0.1:9092"}
		tc.change(&c)
		fields, _ := connector.FieldErrors(c.Validate())
		if len(fields) != 1 || fields[0].Field != tc.field {
			t.Errorf("%s: Validate() = %v, want one problem with %s", tc.field, c.Validate(), tc.field)
		}
	}
	c = DefaultConn()
	c.Brokers = []string{"127.0.0.1:9092"}
	if err := c.Validate(); err != nil {
		t.Errorf("defaults with a broker: %v", err)
	}
}

// The SASL password never shows in formatted output.
func TestSecretRedacted(t *testing.T) {
	c := DefaultConn()
	c.SASL = SASL{Mechanism: "plain", Username: "u", Password: "hunter2"}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprint(c.SASL.Password)} {
		if strings.Contains(s, "hunter2") {
			t.Errorf("password shown in %q", s)
		}
	}
}
