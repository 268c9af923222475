package e2e

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/internal/testkit/testhydra"
)

// TestNPMClientsWithAccessTokens: Apollo Client and graphql-ws with an
// access token of a real OAuth server (ORY Hydra, internal/testkit/testhydra) in
// Authorization: Bearer instead of a key (docs/identity.md), on the gateway
// of the access-token tests (startJWTStack): the records API and the
// library engine's site.
func TestNPMClientsWithAccessTokens(t *testing.T) {
	t.Parallel()
	dir := npmClients(t)
	idp := testhydra.Start(t, testhydra.Options{})
	g := startJWTStack(t, idp, "")
	s := g.s
	records := s.HTTPSURL + "/v1/graphql"
	sfx := testenv.RandomSuffix(6)
	ent, plain, lib := "npm-ent-"+sfx, "npm-plain-"+sfx, "npm-lib-"+sfx
	g.client(t, ent, map[string]any{"plan": "enterprise", "org_id": "npm-org-ent-" + sfx})
	g.client(t, plain, map[string]any{"org_id": "npm-org-plain-" + sfx}) // no plan: default_tier free
	g.client(t, lib, map[string]any{"plan": "jwtlib", "org_id": "npm-org-lib-" + sfx})

	t.Run("Apollo Client", func(t *testing.T) {
		const bills = `query Bills($n: Int!) { bills(input: {limit: $n}) { items { id congress officialTitle } nextCursor } }`
		const filings = `query Filings { regulatoryFilings(input: {limit: 2}) { items { id } nextCursor } }`
		vars := map[string]any{"n": 3}
		tok := g.token(t, ent)
		r := runApollo(t, dir, s.CARoot, records, tok, apolloOp{Query: bills, Variables: vars}, apolloOp{Query: filings})
		wantApolloData(t, "bills", r[0], s.Client, records, tok, vars)
		wantApolloData(t, "regulatoryFilings", r[1], s.Client, records, tok, nil)

		r = runApollo(t, dir, s.CARoot, records, g.token(t, plain), apolloOp{Query: filings})
		wantNotEntitled(t, "default tier free, regulatoryFilings", r[0].Error, "regulatory_filings")
		r = runApollo(t, dir, s.CARoot, records, g.keep("not.a.token"), apolloOp{Query: bills, Variables: vars})
		if r[0].Error == nil || r[0].Error.StatusCode != http.StatusUnauthorized {
			t.Errorf("a malformed token: the client surfaced %s, want a 401", describe(r[0].Error))
		}
	})

	t.Run("graphql-ws", func(t *testing.T) {
		tok := g.token(t, lib)
		run := startNPMScript(t, dir, "", "graphql-ws.mjs", tok, map[string]any{"url": g.libWS, "query": loanEventsDoc, "count": 3})
		awaitSubscribers(t, g.events, 1)
		want := lendAndReturn(t, "http"+strings.TrimPrefix(g.libWS, "ws"), tok, "b2", 3)
		var out wsOutput
		raw := run.wait(t, &out)
		if !out.Acknowledged || out.Error != nil || !reflect.DeepEqual(out.loanEvents(), want) {
			t.Errorf("graphql-ws with a token: %s\nwant events %+v", raw, want)
		}
		awaitSubscribers(t, g.events, 0)
	})
}
