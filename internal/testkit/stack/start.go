package stack

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// StartRecordsd starts the backend and waits for its health endpoint.
func (s *Stack) StartRecordsd() *Proc {
	s.t.Helper()
	p := s.SpawnProc("recordsd", s.Bins.Recordsd, "serve")
	url := "http://" + s.Getenv("RECORDSD_LISTEN") + "/healthz"
	WaitFor(s.t, 30*time.Second, "recordsd /healthz", func() error {
		if p.Exited() {
			s.t.Fatalf("recordsd exited while starting; log %s", p.Log)
		}
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	return p
}

// StartGateway starts civicgate with the given Caddyfile (relative to the
// repository) and waits until it answers over TLS with its local CA.
func (s *Stack) StartGateway(caddyfile string) *Proc {
	s.t.Helper()
	p := s.SpawnProc("civicgate", s.Bins.Civicgate, "run", "--config", caddyfile, "--adapter", "caddyfile")
	WaitFor(s.t, 60*time.Second, "gateway TLS with the local CA root", func() error {
		if p.Exited() {
			s.t.Fatalf("civicgate exited while starting; log %s", p.Log)
		}
		pem, err := os.ReadFile(s.CARoot)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("no certificate in %s", s.CARoot)
		}
		s.Client = &http.Client{
			Timeout: 30 * time.Second,
			Transport: &http.Transport{
				TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		resp, err := s.Client.Get(s.HTTPSURL + "/v1/graphql")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	return p
}

// WaitFor polls cond until it returns nil or the deadline passes
// (testenv.Eventually).
func WaitFor(t testing.TB, within time.Duration, what string, cond func() error) {
	t.Helper()
	testenv.Eventually(t, within, what, cond)
}
