package http

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"time"
)

type tlsConfig struct {
	cfg   *tls.Config
	certs *certReloader
}

// newTLSConfig loads the certificate (an error here fails Open) and the
// client CAs.
func newTLSConfig(t *TLS) (*tlsConfig, error) {
	cr := &certReloader{certFile: t.CertFile, keyFile: t.KeyFile}
	if err := cr.load(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cr.get}
	if t.ClientCAFile != "" {
		pem, err := os.ReadFile(t.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("client_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client_ca_file %s holds no PEM certificate", t.ClientCAFile)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return &tlsConfig{cfg: cfg, certs: cr}, nil
}

// certReloader serves the certificate of its files, read again when either
// file's modification time changed (looked at most once a second, on a
// handshake), so that a renewed certificate is served without a restart. A
// renewal caught half written keeps the certificate in use until both files
// load.
type certReloader struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	mod     [2]time.Time
	checked time.Time
}

func (c *certReloader) stat() ([2]time.Time, error) {
	var m [2]time.Time
	for i, f := range []string{c.certFile, c.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return m, err
		}
		m[i] = fi.ModTime()
	}
	return m, nil
}

func (c *certReloader) load() error {
	m, err := c.stat()
	if err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cert, c.mod, c.checked = &cert, m, time.Now()
	return nil
}

func (c *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	cert, stale := c.cert, time.Since(c.checked) >= time.Second
	if stale {
		c.checked = time.Now()
	}
	mod := c.mod
	c.mu.Unlock()
	if stale {
		if m, err := c.stat(); err == nil && m != mod {
			if err := c.load(); err == nil {
				c.mu.Lock()
				cert = c.cert
				c.mu.Unlock()
			}
		}
	}
	return cert, nil
}
