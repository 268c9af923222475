// Command civicgate is the civicgate gateway: a Caddy v2 build with Caddy's
// standard modules and the civicgate modules (auth, rate limit, GraphQL guard,
// webhooks, the organization console, the response cache, MCP, tracing), plus the `civicgate keys` key-management,
// `civicgate tokens` access-token deny list,
// `civicgate webhooks` migration, `civicgate console link`, `civicgate audit`,
// `civicgate usage` and `civicgate schema check` commands. `civicgate version` prints civicgate's version and
// commit beside Caddy's.
package main

import (
	"fmt"
	"os"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/civicgate/civicgate/modules/auth"
	_ "github.com/civicgate/civicgate/modules/auth/keycmd"
	_ "github.com/civicgate/civicgate/modules/console"
	_ "github.com/civicgate/civicgate/modules/console/consolecmd"
	_ "github.com/civicgate/civicgate/modules/gqlcache"
	_ "github.com/civicgate/civicgate/modules/gqlguard"
	_ "github.com/civicgate/civicgate/modules/logredact"
	_ "github.com/civicgate/civicgate/modules/mcp"
	_ "github.com/civicgate/civicgate/modules/ratelimit"
	_ "github.com/civicgate/civicgate/modules/ratelimit/usageadmin"
	_ "github.com/civicgate/civicgate/modules/tracing"
	_ "github.com/civicgate/civicgate/modules/webhooks"
	_ "github.com/civicgate/civicgate/modules/webhooks/webhookcmd"
)

func main() {
	if isVersionCommand(os.Args[1:]) {
		printVersion(os.Stdout)
		return
	}
	if err := checkAdminAddress(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "civicgate:", err)
		os.Exit(1)
	}
	caddycmd.Main()
}
