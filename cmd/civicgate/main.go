// Command civicgate is the civicgate gateway: a Caddy v2 build with Caddy's
// standard modules and the civicgate modules (auth, rate limit, GraphQL guard).
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

func main() {
	caddycmd.Main()
}
