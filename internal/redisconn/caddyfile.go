package redisconn

import (
	"github.com/civicgate/civicgate/internal/caddyopt"
)

// Option reads the `redis` option of a module's block into c, with
// caddyopt's conventions (once-only options, the same refusals):
//
//	redis <url>
//	redis [<url>] {
//	    addrs             <host:port>...
//	    mode              standalone|cluster|sentinel
//	    master_name       <name>
//	    username          <name>
//	    password          <secret>          # {env.REDIS_PASSWORD}
//	    sentinel_username <name>
//	    sentinel_password <secret>
//	    db                <n>
//	    tls [{                              # alone: TLS with the system roots
//	        ca          <file>
//	        cert        <file>
//	        key         <file>
//	        server_name <name>
//	    }]
//	}
//
// Errors about the block's options name it "<block> redis: …".
func Option(c *Config) caddyopt.Option {
	return caddyopt.Func(func(a *caddyopt.Args) error {
		d := a.Dispenser()
		if d.NextArg() {
			c.URL = d.Val()
		}
		// the rest of the segment (more arguments, the block) is read like
		// any caddyopt block, from its own dispenser: the URL or `redis`
		// stands for the block's name
		return caddyopt.Read(d.NewFromNextSegment(), a.Block()+" "+a.Option(), Fields(c))
	})
}

// Fields are the block form's options, for a module that also accepts some
// of them in its own block (civic_rate_limit's addrs, master_name, username,
// password).
func Fields(c *Config) caddyopt.Block {
	return caddyopt.Block{
		"addrs":             caddyopt.Strings(&c.Addrs),
		"mode":              caddyopt.OneOf(&c.Mode, ModeStandalone, ModeCluster, ModeSentinel),
		"master_name":       caddyopt.String(&c.MasterName),
		"username":          caddyopt.String(&c.Username),
		"password":          caddyopt.String(&c.Password),
		"sentinel_username": caddyopt.String(&c.SentinelUsername),
		"sentinel_password": caddyopt.String(&c.SentinelPassword),
		"db": caddyopt.Func(func(a *caddyopt.Args) error {
			v, err := a.One()
			if err != nil {
				return err
			}
			n, err := parseDB(v)
			if err != nil {
				return a.Errf("%v", err)
			}
			c.DB = &n
			return nil
		}),
		"tls": tlsBlock(c),
	}
}

func tlsBlock(c *Config) caddyopt.Option {
	t := new(TLS)
	return caddyopt.Sub(caddyopt.Block{
		"ca":          caddyopt.String(&t.CA),
		"cert":        caddyopt.String(&t.Cert),
		"key":         caddyopt.String(&t.Key),
		"server_name": caddyopt.String(&t.ServerName),
	}).Then(func() { c.TLS = t })
}
