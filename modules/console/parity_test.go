package console

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// webhookAction is one webhook action the console offers and the API
// request that does the same (docs/design.md D43 lists them).
type webhookAction struct {
	name    string
	change  bool
	console func(t *testing.T, g *gateway, session string, o org, id, target string) reply
	api     func(t *testing.T, g *gateway, key, id, target string) reply
}

func form(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

var webhookActions = []webhookAction{
	{"create", true,
		func(t *testing.T, g *gateway, s string, o org, _, target string) reply {
			return g.consoleDo(t, s, http.MethodPost, "/orgs/"+o.id+"/webhooks", form("url", target, "env", "live"))
		},
		func(t *testing.T, g *gateway, key, _, target string) reply {
			return g.apiDo(t, key, http.MethodPost, "/v1/webhook-endpoints", `{"url":"`+target+`"}`)
		}},
	{"list", false,
		func(t *testing.T, g *gateway, s string, o org, _, _ string) reply {
			return g.consoleDo(t, s, http.MethodGet, "/orgs/"+o.id+"/webhooks", nil)
		},
		func(t *testing.T, g *gateway, key, _, _ string) reply {
			return g.apiDo(t, key, http.MethodGet, "/v1/webhook-endpoints", "")
		}},
	{"endpoint and deliveries", false,
		func(t *testing.T, g *gateway, s string, o org, id, _ string) reply {
			return g.consoleDo(t, s, http.MethodGet, "/orgs/"+o.id+"/webhooks/"+id, nil)
		},
		func(t *testing.T, g *gateway, key, id, _ string) reply {
			if r := g.apiDo(t, key, http.MethodGet, "/v1/webhook-endpoints/"+id, ""); r.code != http.StatusOK {
				return r
			}
			return g.apiDo(t, key, http.MethodGet, "/v1/webhook-endpoints/"+id+"/deliveries", "")
		}},
	{"rotate secret", true,
		func(t *testing.T, g *gateway, s string, o org, id, _ string) reply {
			return g.consoleDo(t, s, http.MethodPost, "/orgs/"+o.id+"/webhooks/"+id+"/rotate-secret", form())
		},
		func(t *testing.T, g *gateway, key, id, _ string) reply {
			return g.apiDo(t, key, http.MethodPost, "/v1/webhook-endpoints/"+id+"/rotate-secret", "")
		}},
	{"test", true,
		func(t *testing.T, g *gateway, s string, o org, id, _ string) reply {
			return g.consoleDo(t, s, http.MethodPost, "/orgs/"+o.id+"/webhooks/"+id+"/test", form())
		},
		func(t *testing.T, g *gateway, key, id, _ string) reply {
			return g.apiDo(t, key, http.MethodPost, "/v1/webhook-endpoints/"+id+"/test", "")
		}},
	{"replay", true,
		func(t *testing.T, g *gateway, s string, o org, id, _ string) reply {
			return g.consoleDo(t, s, http.MethodPost, "/orgs/"+o.id+"/webhooks/"+id+"/replay", form("from_cursor", ""))
		},
		func(t *testing.T, g *gateway, key, id, _ string) reply {
			return g.apiDo(t, key, http.MethodPost, "/v1/webhook-endpoints/"+id+"/replay", "")
		}},
	{"delete", true,
		func(t *testing.T, g *gateway, s string, o org, id, _ string) reply {
			return g.consoleDo(t, s, http.MethodPost, "/orgs/"+o.id+"/webhooks/"+id+"/delete", form("confirm", id))
		},
		func(t *testing.T, g *gateway, key, id, _ string) reply {
			return g.apiDo(t, key, http.MethodDelete, "/v1/webhook-endpoints/"+id, "")
		}},
}

// TestConsoleAndAPIRefuseAlike performs every webhook action of the console
// and the equivalent API request for the same organization, as Caddy runs
// both: each pair is refused with the same status, or accepted, alike — a
// tier without the changes family, a suspended organization, a viewer, the
// endpoint limit, a bad URL — and a refusal changes nothing.
func TestConsoleAndAPIRefuseAlike(t *testing.T) {
	g := startGateway(t)
	ctx := t.Context()
	paid := g.newOrg(t, "paid", "paid")
	free := g.newOrg(t, "free", "paid") // downgraded below, keeping the endpoint it registered
	suspended := g.newOrg(t, "suspended", "paid")
	full := g.newOrg(t, "full", "paid")
	ids := map[string]string{}
	for _, o := range []org{paid, free, suspended} {
		ids[o.name] = g.createEndpoint(t, o.key, "https://example.org/"+o.name)
	}
	for range testMaxEndpoints {
		ids[full.name] = g.createEndpoint(t, full.key, "https://example.org/full")
	}
	if _, err := keystore.SetTier(ctx, g.pool, free.name, "free"); err != nil {
		t.Fatal(err)
	}
	if err := keystore.SetOrgStatus(ctx, g.pool, suspended.name, keystore.OrgSuspended); err != nil {
		t.Fatal(err)
	}
	g.awaitAPI(t, free.key, http.StatusForbidden)
	g.awaitAPI(t, suspended.key, http.StatusForbidden)

	const accepted = 0
	for _, tc := range []struct {
		name, role string
		o          org
		target     string // the create action's URL
		only       string // one action ("" = every one)
		refuse     int    // the status of every refused change (accepted: 0)
		refuseRead int    // the status of every refused read
		refusal    string // what the console's refusal says (a part of it)
	}{
		{name: "paid admin", role: keystore.RoleAdmin, o: paid, target: "https://example.org/new"},
		{name: "tier without changes", role: keystore.RoleAdmin, o: free, target: "https://example.org/new",
			refuse: http.StatusForbidden, refuseRead: http.StatusForbidden, refusal: "does not include the changes family"},
		{name: "suspended organization", role: keystore.RoleAdmin, o: suspended, target: "https://example.org/new",
			refuse: http.StatusForbidden, refuseRead: http.StatusForbidden, refusal: "This organization is suspended"},
		{name: "viewer", role: keystore.RoleViewer, o: paid, target: "https://example.org/new",
			refuse: http.StatusForbidden, refusal: "Your role (viewer) can see this organization but not change it"},
		{name: "endpoint limit reached", role: keystore.RoleAdmin, o: full, target: "https://example.org/new", only: "create",
			refuse: http.StatusBadRequest, refusal: "an organization may register at most 5 webhook endpoints; delete one first"},
		{name: "bad URL", role: keystore.RoleAdmin, o: paid, target: "http://169.254.169.254/latest", only: "create",
			refuse: http.StatusBadRequest, refusal: "url: special-purpose address 169.254.169.254"},
		{name: "bad URL, tier without changes", role: keystore.RoleAdmin, o: free, target: "https://127.0.0.1/", only: "create",
			refuse: http.StatusForbidden, refusal: "does not include the changes family"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			session := g.session(t, tc.o, tc.role)
			endpointsBefore, deliveriesBefore := g.endpoints(t, tc.o.id)
			for _, a := range webhookActions {
				if tc.only != "" && a.name != tc.only {
					continue
				}
				want := tc.refuseRead
				if a.change {
					want = tc.refuse
				}
				consoleID, apiID := ids[tc.o.name], ids[tc.o.name]
				if a.name == "delete" && want == accepted { // each side deletes an endpoint of its own
					consoleID, apiID = g.createEndpoint(t, tc.o.key, "https://example.org/c"), g.createEndpoint(t, tc.o.key, "https://example.org/a")
				}
				c := a.console(t, g, session, tc.o, consoleID, tc.target)
				check(t, "console "+a.name, c, want)
				if want != accepted && !strings.Contains(c.body, tc.refusal) {
					t.Errorf("console %s: the page does not say %q:\n%.3000s", a.name, tc.refusal, c.body)
				}
				if tc.role == keystore.RoleViewer {
					continue // the API has no read-only key: the paid admin case is its pair
				}
				check(t, "API "+a.name, a.api(t, g, tc.o.key, apiID, tc.target), want)
			}
			if tc.refuse != accepted {
				endpoints, deliveries := g.endpoints(t, tc.o.id)
				if endpoints != endpointsBefore || deliveries != deliveriesBefore {
					t.Errorf("refused, yet the organization went from %d endpoints and %d deliveries to %d and %d",
						endpointsBefore, deliveriesBefore, endpoints, deliveries)
				}
			}
		})
	}
}

// check asserts an answer is accepted (2xx) when want is 0, else exactly want.
func check(t *testing.T, what string, r reply, want int) {
	t.Helper()
	switch {
	case want == 0 && (r.code < 200 || r.code > 299):
		t.Errorf("%s: %d, want it accepted:\n%.2000s", what, r.code, r.body)
	case want != 0 && r.code != want:
		t.Errorf("%s: %d, want %d:\n%.2000s", what, r.code, want, r.body)
	}
	if strings.Contains(r.body, "goroutine ") || strings.Contains(r.body, "SELECT ") {
		t.Errorf("%s: the answer shows internals:\n%.2000s", what, r.body)
	}
}
