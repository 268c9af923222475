package testenv

import (
	"context"
	"crypto/tls"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestRedisTLSServesOnlyTheACLUserOverTLS checks the TLS engine: the ACL
// user reads and writes over TLS verified by the test CA; a wrong password,
// the disabled default user, a dangerous command, a client that does not
// trust the CA and plain TCP are all refused.
func TestRedisTLSServesOnlyTheACLUserOverTLS(t *testing.T) {
	t.Parallel()
	r := StartRedisTLS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := r.Client()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.FlushAll(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("FLUSHALL as the ACL user: %v, want NOPERM", err)
	}
	u, err := url.Parse(r.URL())
	if err != nil || u.Scheme != "rediss" || u.Query().Get("tls_ca_file") != r.CAFile {
		t.Fatalf("URL %q (%v)", r.URL(), err)
	}
	refused := map[string]*redis.Options{}
	o := *r.options()
	o.Password = "wrong"
	refused["wrong password"] = &o
	o2 := *r.options()
	o2.Username, o2.Password = "", ""
	refused["default user"] = &o2
	o3 := *r.options()
	o3.TLSConfig = &tls.Config{ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	refused["untrusted CA"] = &o3
	o4 := *r.options()
	o4.TLSConfig = nil
	refused["plain TCP"] = &o4
	for name, opts := range refused {
		opts.MaxRetries, opts.DialTimeout, opts.ReadTimeout = -1, 2*time.Second, 2*time.Second
		cl := redis.NewClient(opts)
		if err := cl.Get(ctx, "k").Err(); err == nil {
			t.Errorf("%s: GET succeeded", name)
		}
		_ = cl.Close()
	}
}
