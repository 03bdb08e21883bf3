package kafkaclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/preflight"
)

// CheckFiles reads the certificate files the connection names, as Opts will
// when the connector opens, and reports each that cannot be used as a
// *connector.FieldError (see connector.Checker).
func (c *Conn) CheckFiles() error {
	var errs []error
	t := c.TLS
	if t.CAFile != "" {
		if err := preflight.File(t.CAFile); err != nil {
			errs = append(errs, connector.Fieldf("tls.ca_file", "%v", err))
		} else if pem, err := os.ReadFile(t.CAFile); err == nil && !x509.NewCertPool().AppendCertsFromPEM(pem) {
			errs = append(errs, connector.Fieldf("tls.ca_file", "%s holds no PEM certificate", t.CAFile))
		}
	}
	if t.CertFile != "" && t.KeyFile != "" {
		fileErr := false
		for _, f := range []struct{ field, path string }{{"tls.cert_file", t.CertFile}, {"tls.key_file", t.KeyFile}} {
			if err := preflight.File(f.path); err != nil {
				errs = append(errs, connector.Fieldf(f.field, "%v", err))
				fileErr = true
			}
		}
		if !fileErr {
			if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
				errs = append(errs, connector.Fieldf("tls.cert_file", "with tls.key_file: %v", err))
			}
		}
	}
	return errors.Join(errs...)
}
