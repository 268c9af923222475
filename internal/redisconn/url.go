package redisconn

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The URL options redisconn reads itself; every other option goes to
// go-redis' own URL parser for the mode (redis.ParseURL, ParseClusterURL,
// ParseFailoverURL), which refuses unknown ones.
const (
	optMode             = "mode"
	optMasterName       = "master_name"
	optSentinelUsername = "sentinel_username"
	optSentinelPassword = "sentinel_password"
	optAddr             = "addr"
	optCAFile           = "tls_ca_file"
	optCertFile         = "tls_cert_file"
	optKeyFile          = "tls_key_file"
	optServerName       = "tls_server_name"
	optSkipVerify       = "skip_verify"
)

// resolve turns a placeholder-free Config into a Target.
func resolve(c *Config) (*Target, error) {
	u := &url.URL{Scheme: "redis"}
	if c.URL != "" {
		var err error
		if u, err = url.Parse(c.URL); err != nil {
			return nil, errors.New("redis URL does not parse") // url's error repeats the URL: not echoed
		}
	}
	p := urlParts{secrets: []string{c.Password, c.SentinelPassword}}
	if u.User != nil {
		pw, _ := u.User.Password()
		p.user, p.password = u.User.Username(), pw
		p.secrets = append(p.secrets, pw)
	}
	if err := p.read(c, u); err != nil {
		return nil, p.scrub(err)
	}
	t, err := p.build(u)
	if err != nil {
		return nil, p.scrub(err)
	}
	return t, nil
}

// urlParts are a Config and its URL merged.
type urlParts struct {
	secrets                        []string // passwords: never in an error
	mode, master                   string
	addrs                          []string
	user, password                 string
	sentinelUser, sentinelPassword string
	db                             *int
	tls                            *TLS // nil: plain TCP
	query                          url.Values
}

// read merges c into the URL's parts (c's values win).
func (p *urlParts) read(c *Config, u *url.URL) error {
	switch u.Scheme {
	case "redis", "rediss", "unix":
	default:
		return fmt.Errorf("redis URL: scheme %q is not redis, rediss or unix", clip(u.Scheme))
	}
	q := u.Query()
	for _, name := range []string{"username", "password"} {
		if _, ok := q[name]; ok {
			return fmt.Errorf("redis URL: option %s: give credentials as user:password@ (or username and password in the block)", name)
		}
	}
	take := func(name string) string {
		vs := q[name]
		delete(q, name)
		if len(vs) == 0 {
			return ""
		}
		return vs[len(vs)-1]
	}
	p.mode, p.master = take(optMode), take(optMasterName)
	p.sentinelUser, p.sentinelPassword = take(optSentinelUsername), take(optSentinelPassword)
	p.secrets = append(p.secrets, p.sentinelPassword)
	t := TLS{CA: take(optCAFile), Cert: take(optCertFile), Key: take(optKeyFile), ServerName: take(optServerName)}
	if v := take(optSkipVerify); v != "" {
		t.InsecureSkipVerify = v == "true" || v == "1"
	}
	if u.Scheme == "rediss" || t != (TLS{}) || c.TLS != nil {
		p.tls = &t
	}
	if c.TLS != nil {
		p.tls.merge(c.TLS)
	}
	if u.Scheme != "unix" && c.URL != "" {
		host, port := u.Hostname(), u.Port()
		if host == "" {
			host = "localhost"
		}
		if port == "" {
			port = "6379"
		}
		p.addrs = append(p.addrs, net.JoinHostPort(host, port))
	}
	p.addrs = append(p.addrs, q[optAddr]...)
	delete(q, optAddr)
	p.addrs = append(p.addrs, c.Addrs...)
	for _, a := range p.addrs {
		if h, port, err := net.SplitHostPort(a); err != nil || h == "" || port == "" {
			return fmt.Errorf("redis: address %q: want host:port", clip(a))
		}
	}
	override := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	override(&p.mode, c.Mode)
	override(&p.master, c.MasterName)
	override(&p.user, c.Username)
	override(&p.password, c.Password)
	override(&p.sentinelUser, c.SentinelUsername)
	override(&p.sentinelPassword, c.SentinelPassword)
	p.db = c.DB
	if v := take("db"); v != "" {
		n, err := parseDB(v)
		if err != nil {
			return fmt.Errorf("redis URL: db: %w", err)
		}
		if p.db == nil {
			p.db = &n
		}
	}
	p.query = q
	if err := checkMode(p.mode); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	if p.mode == "" {
		switch {
		case p.master != "":
			p.mode = ModeSentinel
		case len(p.addrs) > 1:
			p.mode = ModeCluster
		default:
			p.mode = ModeStandalone
		}
	}
	return p.check(u)
}

// check refuses combinations that cannot work.
func (p *urlParts) check(u *url.URL) error {
	switch {
	case u.Scheme == "unix" && p.mode != ModeStandalone:
		return fmt.Errorf("redis: a unix socket is standalone, not %s", p.mode)
	case u.Scheme == "unix" && len(p.addrs) > 0:
		return errors.New("redis: a unix socket takes no addrs")
	case u.Scheme != "unix" && len(p.addrs) == 0:
		return errors.New("redis: no address")
	case p.mode == ModeSentinel && p.master == "":
		return errors.New("redis: sentinel mode needs master_name")
	case p.mode != ModeSentinel && p.master != "":
		return fmt.Errorf("redis: master_name is for sentinel mode, not %s", p.mode)
	case p.mode == ModeStandalone && len(p.addrs) > 1:
		return fmt.Errorf("redis: standalone mode takes one address, got %d (several: mode cluster, or master_name for Sentinel)", len(p.addrs))
	case p.mode == ModeCluster && p.db != nil && *p.db != 0:
		return errors.New("redis: Cluster has only database 0")
	case p.mode != ModeSentinel && (p.sentinelUser != "" || p.sentinelPassword != ""):
		return errors.New("redis: sentinel_username and sentinel_password are for sentinel mode")
	case p.tls != nil && (p.tls.Cert == "") != (p.tls.Key == ""):
		return errors.New("redis: a TLS client certificate needs both cert and key")
	}
	return nil
}

// merge sets t's fields that o gives.
func (t *TLS) merge(o *TLS) {
	if o.CA != "" {
		t.CA = o.CA
	}
	if o.Cert != "" {
		t.Cert = o.Cert
	}
	if o.Key != "" {
		t.Key = o.Key
	}
	if o.ServerName != "" {
		t.ServerName = o.ServerName
	}
	t.InsecureSkipVerify = t.InsecureSkipVerify || o.InsecureSkipVerify
}

// passThrough is u for go-redis' parser: no credentials (set afterwards),
// plain redis:// (TLS is set afterwards), the first address, the options
// redisconn did not read.
func (p *urlParts) passThrough(u *url.URL) string {
	v := *u
	v.User = nil
	v.RawQuery = p.query.Encode()
	if v.Scheme != "unix" {
		v.Scheme, v.Host, v.Path = "redis", p.addrs[0], ""
	}
	return v.String()
}

// scrub removes every password from err's text.
func (p *urlParts) scrub(err error) error {
	msg := err.Error()
	for _, s := range p.secrets {
		if s != "" && strings.Contains(msg, s) {
			msg = strings.ReplaceAll(msg, s, "xxxxx")
		}
	}
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}

// clip shortens a value echoed in an error.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// parseErr wraps an error of go-redis' URL parser.
func parseErr(err error) error {
	return fmt.Errorf("redis URL: %w", err)
}

// build makes the go-redis options of the mode.
func (p *urlParts) build(u *url.URL) (*Target, error) {
	tlsConf, err := p.tls.config()
	if err != nil {
		return nil, err
	}
	raw := p.passThrough(u)
	t := &Target{mode: p.mode, addrs: p.addrs, user: p.user, tls: p.tls, master: p.master}
	switch p.mode {
	case ModeStandalone:
		o, err := redis.ParseURL(raw)
		if err != nil {
			return nil, parseErr(err)
		}
		if p.db != nil {
			o.DB = *p.db
		} else if db, err := pathDB(u); err != nil {
			return nil, err
		} else {
			o.DB = db
		}
		o.Username, o.Password, o.TLSConfig = p.user, p.password, tlsConf
		t.db, t.standalone = o.DB, o
	case ModeCluster:
		if db, err := pathDB(u); err != nil || db != 0 {
			return nil, errors.New("redis: Cluster has only database 0")
		}
		o, err := redis.ParseClusterURL(raw)
		if err != nil {
			return nil, parseErr(err)
		}
		o.Addrs, o.Username, o.Password, o.TLSConfig = p.addrs, p.user, p.password, tlsConf
		t.cluster = o
	case ModeSentinel:
		o, err := redis.ParseFailoverURL(raw)
		if err != nil {
			return nil, parseErr(err)
		}
		o.SentinelAddrs, o.MasterName = p.addrs, p.master
		o.Username, o.Password, o.TLSConfig = p.user, p.password, tlsConf
		o.SentinelUsername, o.SentinelPassword = p.sentinelUser, p.sentinelPassword
		if p.db != nil {
			o.DB = *p.db
		} else if o.DB, err = pathDB(u); err != nil {
			return nil, err
		}
		t.db, t.failover = o.DB, o
	}
	t.key = p.poolKey(t)
	return t, nil
}

// pathDB is the database number of the URL's path (/<db>; none: 0).
func pathDB(u *url.URL) (int, error) {
	if u.Scheme == "unix" {
		return 0, nil
	}
	f := strings.Trim(u.Path, "/")
	if f == "" {
		return 0, nil
	}
	n, err := parseDB(f)
	if err != nil {
		return 0, fmt.Errorf("redis URL path: %w", err)
	}
	return n, nil
}
