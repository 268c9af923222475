package redisconn

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// config builds the client TLS configuration (nil t: plain TCP): TLS 1.2
// or later, the system roots or the CA file's, a client certificate, and
// the server name to verify — empty by default, so that each node is
// verified against the host it is dialed at (a Cluster's or Sentinel's
// nodes each have their own).
func (t *TLS) config() (*tls.Config, error) {
	if t == nil {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return nil, fmt.Errorf("redis tls ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redis tls ca %s: no PEM certificate", t.CA)
		}
		c.RootCAs = pool
	}
	if t.Cert != "" {
		cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("redis tls client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
