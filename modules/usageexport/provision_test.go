package usageexport

import (
	"context"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// TestProvisionRefusals: what Provision refuses, with messages that never
// echo the DSN, the sink URL or the header's value.
func TestProvisionRefusals(t *testing.T) {
	t.Setenv("CIVICGATE_TEST_EXPORT_EMPTY", "")
	const dsn = "postgres://u:dbpass@127.0.0.1:1/x"
	for name, c := range map[string]struct {
		app  App
		want string
	}{
		"no database":  {App{Sink: "https://s.example/e"}, "database is empty"},
		"no sink":      {App{Database: dsn}, "sink is empty"},
		"sink scheme":  {App{Database: dsn, Sink: "ftp://tok3n@s.example/e"}, "not an http or https URL"},
		"sink no host": {App{Database: dsn, Sink: "https:///e?token=tok3n"}, "not an http or https URL"},
		"header name":  {App{Database: dsn, Sink: "https://s.example/e", AuthHeader: "X Bad", AuthValue: "v"}, "is not a header name"},
		"header value": {App{Database: dsn, Sink: "https://s.example/e", AuthHeader: "Authorization", AuthValue: "Bearer a\r\nX: tok3n"}, "line break"},
		"unset value":  {App{Database: dsn, Sink: "https://s.example/e", AuthHeader: "Authorization", AuthValue: "{env.CIVICGATE_TEST_EXPORT_EMPTY}"}, "resolves to nothing"},
		"since":        {App{Database: dsn, Sink: "https://s.example/e", Since: "yesterday"}, "not an RFC 3339 time"},
		"bad dsn":      {App{Database: "postgres://u:dbpass@[bad", Sink: "https://s.example/e"}, "cannot parse the database DSN"},
	} {
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		err := c.app.Provision(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
			continue
		}
		for _, secret := range []string{"dbpass", "tok3n"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the error echoes %q: %v", name, secret, err)
			}
		}
	}
}
