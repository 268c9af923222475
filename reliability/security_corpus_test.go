package reliability

import "strconv"

// securityCorpus holds the requests of the 2026-11 security review
// (docs/security.md "Review of 2026-11"): documents shaped to evade the
// entitlement check, sent with a free key (families bills and members). Each
// must be refused exactly as the plain request for the paid field is.
func securityCorpus() []hostile {
	const notEntitled = `{"error":"Tier not entitled to this endpoint family"}`
	free := func(query string) (string, string) {
		body := gqlBody(query)
		return "POST /v1/graphql HTTP/1.1\r\nAuthorization: Bearer {{FREE}}\r\nContent-Type: application/json", body
	}
	var out []hostile
	for _, c := range []struct{ name, why, query, opName string }{
		{"fragment shared by two operations", "a fragment first walked for operation A must still count for B (it leaked lobbying data)",
			`query A { ...F } query B { ...F } fragment F on Query { lobbyingDisclosures(input:{limit:2}) { items { id registrant_name income } } }`, "B"},
		{"fragment chain", "B spreads F, F spreads G, G was walked for A first",
			`query A { ...G } query B { ...F } fragment F on Query { ...G } fragment G on Query { regulatoryFilings(input:{limit:1}) { items { id } } }`, "B"},
		{"alias of an entitled name", "an alias named like an entitled field is still the paid field",
			`{ bills: federalBudgets(input:{dataset: OUTLAYS, limit:1}) { items { id } } }`, ""},
		{"nested inline fragments", "inline fragments with and without a type condition",
			`{ ... on Query { ... { lobbyingDisclosures { items { id } } } } }`, ""},
		{"include true", "a directive that keeps the field",
			`{ bills(input:{limit:1}) { items { id } } lobbyingDisclosures @include(if: true) { items { id } } }`, ""},
		{"fragment spread in the third operation", "the paid fragment spread last, by the selected operation",
			`query A { ...E } query B { ...E } query C { ...E ...P } fragment E on Query { bills(input:{limit:1}) { items { id } } } fragment P on Query { federalBudgets(input:{dataset: APPROPRIATIONS}) { items { id } } }`, "C"},
	} {
		head, body := free(c.query)
		if c.opName != "" {
			body = `{"query":` + strconv.Quote(c.query) + `,"operationName":"` + c.opName + `"}`
		}
		out = append(out, hostile{name: "entitlement: " + c.name, why: c.why, head: head, body: body, status: 403, want: notEntitled})
	}
	// The guard decides before variables are known: a field under @skip with a
	// variable counts, even when the variable would skip it (docs/security.md).
	out = append(out, hostile{name: "entitlement: skip by variable", why: "conservative: a skippable paid field is still a paid field",
		head:   "POST /v1/graphql HTTP/1.1\r\nAuthorization: Bearer {{FREE}}\r\nContent-Type: application/json",
		body:   `{"query":"query($s: Boolean!) { bills(input:{limit:1}) { nextCursor } lobbyingDisclosures @skip(if: $s) { nextCursor } }","variables":{"s":true}}`,
		status: 403, want: notEntitled})
	// A key in the URL (Congress.gov's API takes ?api_key=): refused before any
	// lookup, whatever else the request carries, and — as every entry — never
	// written to a log (TestHostileCorpus searches every process log for it).
	const keyInURL = `{"errors":[{"message":"API key must not be sent in the URL; use the Authorization header"}]}`
	for _, c := range []struct{ name, head string }{
		{"access_token in the query", "GET /bills?limit=2&access_token={{FREE}} HTTP/1.1"},
		{"api_key beside a valid header", "GET /bills?api_key={{FREE}} HTTP/1.1\r\nAuthorization: Bearer {{FREE}}"},
		{"percent-encoded key", "GET /bills?api_key={{FREEPCT}} HTTP/1.1"},
		{"key in the path", "GET /v1/{{FREE}}/bills HTTP/1.1"},
		{"key in a GraphQL URL", "POST /v1/graphql?key={{KEY}} HTTP/1.1\r\nContent-Type: application/json"},
	} {
		out = append(out, hostile{name: "key in URL: " + c.name, why: "a key in the URL is already exposed; 400 before any lookup",
			head: c.head, status: 400, want: keyInURL})
	}
	out = append(out, hostile{name: "key in Referer", why: "a header that carries a key is logged redacted (civic_redact)",
		head:   "GET /nowhere HTTP/1.1\r\nAuthorization: Bearer {{FREE}}\r\nReferer: https://example.org/app?api_key={{FREE}}",
		status: 404, want: `{"error":"Not Found"}`})
	// Not a security case, but a refusal a client must be able to read.
	out = append(out, hostile{name: "blank query", why: "a query with no operation is a clear 400, not the operationName message",
		head: post(), body: `{"query":" \n# nothing here\n"}`, status: 400,
		want: `{"errors":[{"message":"Request body must contain a non-empty \"query\" string"}]}`})
	return out
}

// webhookTargetCorpus: registration refuses every spelling of a special
// address with the reason, instead of accepting it and failing at dial time
// (docs/security.md "Review of 2026-11", finding 6). Sent with the
// enterprise key (family changes).
func webhookTargetCorpus() []hostile {
	var out []hostile
	for _, c := range []struct{ url, want string }{
		{"https://127.1/hook", `loopback address 127.0.0.1:443 (written \"127.1\")`},
		{"https://2130706433/hook", `loopback address 127.0.0.1:443 (written \"2130706433\")`},
		{"https://0x7f000001/hook", `loopback address 127.0.0.1:443 (written \"0x7f000001\")`},
		{"https://0177.0.0.1/hook", `loopback address 127.0.0.1:443 (written \"0177.0.0.1\")`},
		{"https://10.1/hook", `special-purpose address 10.0.0.1 (written \"10.1\")`},
		{"https://[::127.0.0.1]/hook", `special-purpose address ::7f00:1`},
		{"https://[::ffff:127.0.0.1]/hook", `IPv4-mapped address ::ffff:127.0.0.1 (write the IPv4 address)`},
		{"https://[::ffff:a9fe:a9fe]/hook", `IPv4-mapped address ::ffff:169.254.169.254 (write the IPv4 address)`},
		{"http://127.0.0.1:2019/load", `127.0.0.1:2019 is Caddy's admin endpoint`},
	} {
		body := `{"url":"` + c.url + `","families":["bills"]}`
		out = append(out, hostile{name: "webhook target " + c.url, why: "a special address in any spelling is refused at registration, with the reason",
			head: "POST /v1/webhook-endpoints HTTP/1.1\r\nAuthorization: Bearer {{KEY}}\r\nContent-Type: application/json", body: body,
			status: 400, want: `{"errors":[{"message":"url: ` + c.want + `"}]}`})
	}
	return out
}
