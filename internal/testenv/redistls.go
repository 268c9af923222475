package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisTLS is a private Redis that listens on TLS only, with a certificate
// from a test CA made for it, and one ACL user with a password and no
// dangerous commands (the default user is off). Nothing is persisted; the
// process is killed when the test ends.
type RedisTLS struct {
	t testing.TB
	// Addr is the TLS port's host:port (127.0.0.1).
	Addr string
	// CAFile is the test CA's certificate (PEM), the one root that verifies
	// the server; it lives in the test's temporary directory.
	CAFile string
	// Username and Password are the ACL user's; the password is random.
	Username, Password string
	proc               *redisProcess
}

// StartRedisTLS makes the CA and the server certificate (for 127.0.0.1 and
// localhost), starts the server and waits until the ACL user can PING it.
func StartRedisTLS(t testing.TB) *RedisTLS {
	t.Helper()
	dir := t.TempDir()
	caFile, certFile, keyFile, err := writeTestCerts(dir)
	if err != nil {
		t.Fatalf("testenv: test certificates: %v", err)
	}
	port := FreePort(t)
	r := &RedisTLS{t: t, Addr: "127.0.0.1:" + strconv.Itoa(port), CAFile: caFile,
		Username: "civicgate", Password: RandomSuffix(16)}
	conf := dataNodeConf(0, dir) + fmt.Sprintf("tls-port %d\ntls-cert-file %q\ntls-key-file %q\n"+
		"tls-ca-cert-file %q\ntls-auth-clients no\n"+
		"user default off\nuser %s on >%s ~* &* +@all -@dangerous\n",
		port, certFile, keyFile, caFile, r.Username, r.Password)
	r.proc = startRedisProcess(t, port, dir, conf)
	waitRedisReady(t, r.proc, r.options())
	return r
}

// URL is rediss://user:password@127.0.0.1:port/0?tls_ca_file=<CAFile>.
func (r *RedisTLS) URL() string {
	u := url.URL{Scheme: "rediss", User: url.UserPassword(r.Username, r.Password), Host: r.Addr, Path: "/0",
		RawQuery: url.Values{"tls_ca_file": {r.CAFile}}.Encode()}
	return u.String()
}

// Client returns a client logged in as the ACL user over TLS, closed when
// the test ends.
func (r *RedisTLS) Client() *redis.Client {
	c := redis.NewClient(r.options())
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (r *RedisTLS) options() *redis.Options {
	pem, err := os.ReadFile(r.CAFile)
	if err != nil {
		r.t.Fatalf("testenv: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	return &redis.Options{Addr: r.Addr, Username: r.Username, Password: r.Password,
		TLSConfig: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}}
}

// writeTestCerts writes a test CA (ca.pem) and a server certificate it
// signed (server.pem, server-key.pem) for 127.0.0.1 and localhost into dir.
func writeTestCerts(dir string) (caFile, certFile, keyFile string, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", "", fmt.Errorf("CA key: %w", err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "civicgate test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return "", "", "", fmt.Errorf("CA certificate: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", "", fmt.Errorf("server key: %w", err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return "", "", "", fmt.Errorf("server certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", "", fmt.Errorf("server key: %w", err)
	}
	caFile, certFile, keyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	for _, f := range []struct {
		path, kind string
		der        []byte
	}{{caFile, "CERTIFICATE", caDER}, {certFile, "CERTIFICATE", leafDER}, {keyFile, "PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der}), 0o600); err != nil {
			return "", "", "", fmt.Errorf("write %s: %w", f.path, err)
		}
	}
	return caFile, certFile, keyFile, nil
}
