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
	sec                *testTLS
}

// StartRedisTLS makes the CA and the server certificate (for 127.0.0.1 and
// localhost), starts the server and waits until the ACL user can PING it.
func StartRedisTLS(t testing.TB) *RedisTLS {
	t.Helper()
	NeedsServices(t)
	sec := newTestTLS(t)
	dir := t.TempDir()
	port := FreePort(t)
	r := &RedisTLS{t: t, Addr: "127.0.0.1:" + strconv.Itoa(port), CAFile: sec.caFile,
		Username: sec.user, Password: sec.password, sec: sec}
	conf := dataNodeConf(0, dir) + sec.serverConf(port) + sec.userConf()
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
	tc := r.sec.clientTLS()
	tc.ServerName = "127.0.0.1"
	return &redis.Options{Addr: r.Addr, Username: r.Username, Password: r.Password, TLSConfig: tc}
}

// testTLS is what the TLS engines (RedisTLS, and the Cluster and Sentinel
// started with StartRedisClusterTLS and StartRedisSentinelTLS) share: a test
// CA, a server certificate it signed for 127.0.0.1 and localhost (every node
// of an engine serves the same one), the ACL user clients log in as, and an
// admin user the engine itself uses where the ACL user may not (cluster
// set-up, replication, the sentinels' monitoring and failover).
type testTLS struct {
	caFile, certFile, keyFile string
	roots                     *x509.CertPool
	user, password            string // the ACL user: +@all -@dangerous
	admin, adminPassword      string // the engine's own user: +@all
}

// newTestTLS writes the certificates into a temporary directory of the test
// and draws the passwords.
func newTestTLS(t testing.TB) *testTLS {
	t.Helper()
	caFile, certFile, keyFile, err := writeTestCerts(t.TempDir())
	if err != nil {
		t.Fatalf("testenv: test certificates: %v", err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		t.Fatalf("testenv: %s holds no certificate", caFile)
	}
	return &testTLS{caFile: caFile, certFile: certFile, keyFile: keyFile, roots: roots,
		user: "civicgate", password: RandomSuffix(16), admin: "testenv-admin", adminPassword: RandomSuffix(16)}
}

// serverConf is the TLS part of a node's or sentinel's redis.conf: TLS on
// tlsPort (with "port 0" before it, TLS only), the server certificate, the
// test CA for verifying peers when the node dials out (replication, the
// cluster bus, sentinels: each engine turns those on), no client
// certificates asked for.
func (s *testTLS) serverConf(tlsPort int) string {
	return fmt.Sprintf("tls-port %d\ntls-cert-file %q\ntls-key-file %q\ntls-ca-cert-file %q\ntls-auth-clients no\n",
		tlsPort, s.certFile, s.keyFile, s.caFile)
}

// userConf turns the default user off and makes the ACL user.
func (s *testTLS) userConf() string {
	return fmt.Sprintf("user default off\nuser %s on >%s ~* &* +@all -@dangerous\n", s.user, s.password)
}

// adminConf makes the admin user, as which a replica logs in to its master.
func (s *testTLS) adminConf() string {
	return fmt.Sprintf("user %s on >%s ~* &* +@all\nmasteruser %s\nmasterauth %s\n",
		s.admin, s.adminPassword, s.admin, s.adminPassword)
}

// clientTLS is a client TLS configuration that trusts only the test CA and
// verifies the host dialed (nil s: plain TCP, nil).
func (s *testTLS) clientTLS() *tls.Config {
	if s == nil {
		return nil
	}
	return &tls.Config{RootCAs: s.roots, MinVersion: tls.VersionTLS12}
}

// adminOptions are client options logged in as the admin over TLS (nil s:
// plain TCP as the default user); the caller sets Addr.
func (s *testTLS) adminOptions() *redis.Options {
	if s == nil {
		return &redis.Options{}
	}
	return &redis.Options{Username: s.admin, Password: s.adminPassword, TLSConfig: s.clientTLS()}
}

// engineURL is an engine's URL in the form the gateway reads: the first
// address as the host, the others as addr=, then q; on a TLS engine (s not
// nil) rediss:// with the ACL user's credentials and tls_ca_file=.
func (s *testTLS) engineURL(addrs []string, q url.Values) string {
	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}
	u := url.URL{Scheme: "redis", Host: addrs[0]}
	if s != nil {
		u.Scheme, u.User = "rediss", url.UserPassword(s.user, s.password)
		q.Set("tls_ca_file", s.caFile)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// OtherCA writes the certificate (PEM) of a fresh test CA that no engine
// uses into the test's temporary directory and returns its path: a wrong CA,
// for tests that expect the server's certificate not to verify.
func OtherCA(t testing.TB) string {
	t.Helper()
	caFile, _, _, err := writeTestCerts(t.TempDir())
	if err != nil {
		t.Fatalf("testenv: test certificates: %v", err)
	}
	return caFile
}

// writeTestCerts writes a test CA (ca.pem) and a server certificate it
// signed (server.pem, server-key.pem) for 127.0.0.1 and localhost into dir;
// it serves as a client certificate too.
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
		KeyUsage: x509.KeyUsageDigitalSignature,
		// client auth too: a node presents it when it dials another over the
		// cluster bus, which always asks for the dialer's certificate
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
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
