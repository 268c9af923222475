package redisconn

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// secret is the password in every URL of the tables: no error, String or
// Key may contain it.
const secret = "s3cr3t-Pw"

func TestURLForms(t *testing.T) {
	ca := writeCA(t)
	type want struct {
		mode, desc string
		addrs      []string
		db         int
		user, pass string
		tls        bool
		check      func(t *testing.T, tg *Target)
	}
	cases := map[string]struct {
		url  string
		want want
	}{
		"standalone": {"redis://localhost:6379/2", want{mode: ModeStandalone, addrs: []string{"localhost:6379"}, db: 2,
			desc: "standalone localhost:6379 db=2"}},
		"default port and host": {"redis://", want{mode: ModeStandalone, addrs: []string{"localhost:6379"}}},
		"acl user": {"redis://gw:" + secret + "@10.0.0.1:6380", want{mode: ModeStandalone, addrs: []string{"10.0.0.1:6380"},
			user: "gw", pass: secret, desc: "standalone 10.0.0.1:6380 user=gw"}},
		"password only": {"redis://:" + secret + "@h:1", want{mode: ModeStandalone, addrs: []string{"h:1"}, pass: secret}},
		"rediss": {"rediss://h:6379", want{mode: ModeStandalone, addrs: []string{"h:6379"}, tls: true, desc: "standalone h:6379 tls",
			check: func(t *testing.T, tg *Target) {
				c := tg.standalone.TLSConfig
				if c.MinVersion != tls.VersionTLS12 || c.ServerName != "" || c.RootCAs != nil {
					t.Errorf("tls config %+v: want TLS 1.2+, server name from each host, system roots", c)
				}
			}}},
		"tls option implies tls": {"redis://h:1?tls_ca_file=" + ca + "&tls_server_name=redis.internal", want{mode: ModeStandalone,
			addrs: []string{"h:1"}, tls: true, check: func(t *testing.T, tg *Target) {
				c := tg.standalone.TLSConfig
				if c.RootCAs == nil || c.ServerName != "redis.internal" {
					t.Errorf("tls config: want the CA file's roots and server name redis.internal, got %+v", c)
				}
			}}},
		"cluster by addrs": {"redis://gw:" + secret + "@h:1?addr=h:2&addr=h:3", want{mode: ModeCluster, addrs: []string{"h:1", "h:2", "h:3"},
			user: "gw", pass: secret, desc: "cluster h:1,h:2,h:3 user=gw"}},
		"cluster endpoint": {"rediss://cfg.example:6379?mode=cluster", want{mode: ModeCluster, addrs: []string{"cfg.example:6379"}, tls: true}},
		"sentinel": {"redis://gw:" + secret + "@s1:26379?addr=s2:26379&addr=s3:26379&master_name=civic&sentinel_username=sen&sentinel_password=" + secret + "x",
			want{mode: ModeSentinel, addrs: []string{"s1:26379", "s2:26379", "s3:26379"}, user: "gw", pass: secret,
				desc: "sentinel master=civic s1:26379,s2:26379,s3:26379 user=gw",
				check: func(t *testing.T, tg *Target) {
					if o := tg.failover; o.SentinelUsername != "sen" || o.SentinelPassword != secret+"x" || o.MasterName != "civic" {
						t.Errorf("sentinel credentials or master: %q %q %q", o.SentinelUsername, o.SentinelPassword, o.MasterName)
					}
				}}},
		"sentinel db": {"redis://s1:26379/3?master_name=m", want{mode: ModeSentinel, addrs: []string{"s1:26379"}, db: 3}},
		"pass-through": {"redis://h:1?dial_timeout=3s&pool_size=7&db=4", want{mode: ModeStandalone, addrs: []string{"h:1"}, db: 4,
			check: func(t *testing.T, tg *Target) {
				if tg.standalone.DialTimeout != 3*time.Second || tg.standalone.PoolSize != 7 {
					t.Errorf("dial_timeout %s pool_size %d: want 3s, 7", tg.standalone.DialTimeout, tg.standalone.PoolSize)
				}
			}}},
		"cluster pass-through": {"redis://h:1?addr=h:2&read_timeout=2s", want{mode: ModeCluster, addrs: []string{"h:1", "h:2"},
			check: func(t *testing.T, tg *Target) {
				if tg.cluster.ReadTimeout != 2*time.Second {
					t.Errorf("read_timeout %s, want 2s", tg.cluster.ReadTimeout)
				}
			}}},
		"unix": {"unix:///run/redis.sock?db=5", want{mode: ModeStandalone, db: 5, desc: "standalone unix:/run/redis.sock db=5"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			tg, err := (&Config{URL: c.url}).Resolve(nil)
			if err != nil {
				t.Fatal(err)
			}
			w := c.want
			if tg.Mode() != w.mode || !slices.Equal(tg.Addrs(), w.addrs) || tg.db != w.db || (tg.tls != nil) != w.tls {
				t.Errorf("got %s %v db %d tls %v, want %s %v db %d tls %v", tg.Mode(), tg.Addrs(), tg.db, tg.tls != nil,
					w.mode, w.addrs, w.db, w.tls)
			}
			user, pass := credentials(tg)
			if user != w.user || pass != w.pass {
				t.Errorf("credentials %q %q, want %q %q", user, pass, w.user, w.pass)
			}
			if w.desc != "" && tg.String() != w.desc {
				t.Errorf("String() = %q, want %q", tg.String(), w.desc)
			}
			if strings.Contains(tg.String()+tg.Key(), secret) {
				t.Errorf("String or Key holds the password: %q %q", tg.String(), tg.Key())
			}
			if w.check != nil {
				w.check(t, tg)
			}
		})
	}
}

func credentials(tg *Target) (string, string) {
	switch {
	case tg.cluster != nil:
		return tg.cluster.Username, tg.cluster.Password
	case tg.failover != nil:
		return tg.failover.Username, tg.failover.Password
	}
	return tg.standalone.Username, tg.standalone.Password
}

func TestURLRefusals(t *testing.T) {
	cred := "redis://gw:" + secret + "@"
	cases := map[string]struct{ url, msg string }{
		"does not parse":        {cred + "h :1", "redis URL does not parse"},
		"scheme":                {"http://gw:" + secret + "@h", `scheme "http" is not redis, rediss or unix`},
		"unknown option":        {cred + "h:1?bogus=1", "unexpected option: bogus"},
		"password option":       {cred + "h:1?password=" + secret, "option password: give credentials as user:password@"},
		"bad value is scrubbed": {cred + "h:1?dial_timeout=" + secret, "invalid dial_timeout duration"},
		"mode":                  {cred + "h:1?mode=ring", `want mode standalone, cluster or sentinel, got "ring"`},
		"master in cluster":     {cred + "h:1?master_name=m&mode=cluster", "master_name is for sentinel mode, not cluster"},
		"sentinel no master":    {cred + "h:1?mode=sentinel", "sentinel mode needs master_name"},
		"standalone two":        {cred + "h:1?addr=h:2&mode=standalone", "standalone mode takes one address, got 2"},
		"cluster db":            {cred + "h:1/1?addr=h:2", "Cluster has only database 0"},
		"sentinel creds":        {cred + "h:1?sentinel_password=" + secret, "sentinel_username and sentinel_password are for sentinel mode"},
		"bad addr":              {cred + "h:1?addr=nohost", `address "nohost": want host:port`},
		"ca missing":            {cred + "h:1?tls_ca_file=/nonexistent/ca.pem", "redis tls ca"},
		"cert without key":      {cred + "h:1?tls_cert_file=/x.pem", "needs both cert and key"},
		"unix cluster":          {"unix:///r.sock?mode=cluster", "a unix socket is standalone"},
		"db":                    {cred + "h:1?db=-1", "want a database number ≥ 0"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := (&Config{URL: c.url}).Resolve(nil)
			if err == nil {
				t.Fatalf("resolved, want an error containing %q", c.msg)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q, want it to contain %q", err, c.msg)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error echoes the password: %q", err)
			}
		})
	}
}

// TestConfigFields: the block's fields add to and override the URL's.
func TestConfigFields(t *testing.T) {
	t.Setenv("TEST_REDIS_PASSWORD", secret)
	db := 2
	c := Config{URL: "redis://old:old@h:1", Addrs: []string{"h:2"}, Username: "gw", Password: "{env.TEST_REDIS_PASSWORD}",
		DB: &db, Mode: ModeSentinel, MasterName: "m", TLS: &TLS{ServerName: "redis.internal"}}
	tg, err := c.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	o := tg.failover
	if o == nil || !slices.Equal(o.SentinelAddrs, []string{"h:1", "h:2"}) || o.Username != "gw" || o.Password != secret ||
		o.DB != 2 || o.TLSConfig == nil || o.TLSConfig.ServerName != "redis.internal" {
		t.Fatalf("failover options %+v", o)
	}
	if _, err := (&Config{URL: "{env.TEST_REDIS_UNSET_X}"}).Resolve(nil); err == nil ||
		err.Error() != `redis "{env.TEST_REDIS_UNSET_X}" resolved to an empty URL` {
		t.Errorf("empty URL: %v", err)
	}
	if _, err := (&Config{Password: "{env.TEST_REDIS_PASSWORD}"}).Resolve(nil); err == nil || err.Error() != "redis: no URL and no addrs" {
		t.Errorf("a password alone: %v, want refused", err)
	}
	a, _ := (&Config{URL: "redis://u:a@h:1"}).Resolve(nil)
	b, _ := (&Config{URL: "redis://u:b@h:1"}).Resolve(nil)
	if a.Key() == b.Key() {
		t.Error("two passwords give one pool key")
	}
	if a2, _ := (&Config{URL: "redis://u:a@h:1"}).Resolve(nil); a2.Key() != a.Key() {
		t.Error("one configuration gives two pool keys: a reload would reconnect")
	}
}

// TestTuning: a module's tuning overrides the URL's options and go-redis'
// defaults; zero fields leave them.
func TestTuning(t *testing.T) {
	for _, u := range []string{"redis://h:1?dial_timeout=3s&pool_size=4", "redis://h:1?addr=h:2&dial_timeout=3s&pool_size=4",
		"redis://s:1?master_name=m&dial_timeout=3s&pool_size=4"} {
		tg, err := (&Config{URL: u}).Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		c := tg.Open(Tuning{ReadTimeout: 50 * time.Millisecond, MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true})
		var read, dial time.Duration
		var pool, retries, dialerRetries int
		var ctxTimeout bool
		switch o := c.(type) {
		case *redis.ClusterClient:
			opt := o.Options()
			read, dial, pool, retries, dialerRetries, ctxTimeout = opt.ReadTimeout, opt.DialTimeout, opt.PoolSize, opt.MaxRetries, opt.DialerRetries, opt.ContextTimeoutEnabled
		case *redis.Client:
			opt := o.Options()
			read, dial, pool, retries, dialerRetries, ctxTimeout = opt.ReadTimeout, opt.DialTimeout, opt.PoolSize, opt.MaxRetries, opt.DialerRetries, opt.ContextTimeoutEnabled
		}
		_ = c.Close()
		if read != 50*time.Millisecond || dial != 3*time.Second || pool != 4 || retries > 0 || dialerRetries != 1 || !ctxTimeout {
			t.Errorf("%s: read %s dial %s pool %d retries %d dialer retries %d context timeout %v", tg.Mode(), read, dial, pool, retries, dialerRetries, ctxTimeout)
		}
	}
}

// writeCA writes a CA certificate (any PEM certificate will do for parsing).
func writeCA(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, newTestCA(t).certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
