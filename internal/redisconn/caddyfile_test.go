package redisconn

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/civicgate/civicgate/internal/caddyopt"
)

// readRedis reads `store { redis … }` as a module's block would.
func readRedis(input string) (Config, error) {
	var c Config
	d := caddyfile.NewTestDispenser(input)
	err := caddyopt.Read(d, "store", caddyopt.Block{"redis": Option(&c), "key_prefix": caddyopt.String(new(string))})
	return c, err
}

// TestCaddyfileBlock: the Caddyfile forms and the JSON they give (golden).
func TestCaddyfileBlock(t *testing.T) {
	cases := map[string]struct{ in, json string }{
		"url": {"store {\nredis {env.REDIS_URL}\n}", `{"redis":"{env.REDIS_URL}"}`},
		"url and block": {"store {\nredis rediss://h:6379 {\nusername gw\npassword {env.REDIS_PASSWORD}\n}\nkey_prefix x\n}",
			`{"redis":"rediss://h:6379","username":"gw","password":"{env.REDIS_PASSWORD}"}`},
		"block": {`store {
	redis {
		addrs 10.0.0.1:6379 10.0.0.2:6379 10.0.0.3:6379
		mode cluster
		username {env.REDIS_USERNAME}
		password {env.REDIS_PASSWORD}
		tls {
			ca /etc/redis/ca.pem
			cert /etc/redis/client.pem
			key /etc/redis/client-key.pem
			server_name redis.internal
		}
	}
}`, `{"addrs":["10.0.0.1:6379","10.0.0.2:6379","10.0.0.3:6379"],"mode":"cluster","username":"{env.REDIS_USERNAME}",` +
			`"password":"{env.REDIS_PASSWORD}","tls":{"ca":"/etc/redis/ca.pem","cert":"/etc/redis/client.pem",` +
			`"key":"/etc/redis/client-key.pem","server_name":"redis.internal"}}`},
		"sentinel": {"store {\nredis {\naddrs s1:26379 s2:26379\nmaster_name civic\nsentinel_username sen\nsentinel_password {env.S}\ndb 2\ntls\n}\n}",
			`{"addrs":["s1:26379","s2:26379"],"master_name":"civic","sentinel_username":"sen","sentinel_password":"{env.S}","db":2,"tls":{}}`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cfg, err := readRedis(c.in)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(cfg)
			if string(got) != c.json {
				t.Errorf("got  %s\nwant %s", got, c.json)
			}
		})
	}
}

func TestCaddyfileBlockRefusals(t *testing.T) {
	cases := map[string]struct{ in, msg string }{
		"two urls":       {"store {\nredis a b\n}", "wrong argument count"},
		"unknown":        {"store {\nredis {\nhosts h:1\n}\n}", `store redis: unknown option "hosts"`},
		"twice":          {"store {\nredis {\nmode cluster\nmode cluster\n}\n}", "store redis: mode given twice"},
		"mode":           {"store {\nredis {\nmode ring\n}\n}", `store redis: mode: want standalone, cluster or sentinel, got "ring"`},
		"db":             {"store {\nredis {\ndb one\n}\n}", `store redis: db: want a database number ≥ 0, got "one"`},
		"tls unknown":    {"store {\nredis {\ntls {\ncafile x\n}\n}\n}", `store redis tls: unknown option "cafile"`},
		"redis twice":    {"store {\nredis a\nredis b\n}", "store: redis given twice"},
		"addrs no value": {"store {\nredis {\naddrs\n}\n}", "wrong argument count"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := readRedis(c.in)
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %v, want one containing %q", err, c.msg)
			}
		})
	}
}
