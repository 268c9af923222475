//go:build tools

// Package deps pins the modules the project's packages import, so that parallel
// work on separate packages never has to touch go.mod. It is never built.
package deps

import (
	_ "github.com/99designs/gqlgen/graphql/handler"
	_ "github.com/caddyserver/caddy/v2"
	_ "github.com/caddyserver/caddy/v2/caddytest"
	_ "github.com/caddyserver/caddy/v2/cmd"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/golang-jwt/jwt/v5"
	_ "github.com/hasura/go-graphql-client"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/redis/go-redis/v9"
	_ "github.com/vektah/gqlparser/v2"
	_ "gopkg.in/yaml.v3"
)
