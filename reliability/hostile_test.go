package reliability

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// hostile is one entry of the abuse corpus: an exact request (raw bytes over
// TLS, so nothing is normalised on the way) and the exact answer a demanding
// client expects. {{KEY}} in head and body is replaced by a live enterprise
// key, {{FREE}} by a free-tier key.
type hostile struct {
	name string
	why  string
	head string // request line + headers, CRLF separated; Host and Connection: close are added
	body string
	// gen builds a body too big to write inline (built once, before sending).
	gen func() []byte
	// stream writes the body while the response is read (for bodies that
	// must not be held in memory, and for slow bodies).
	stream func(io.Writer) error
	status int
	want   string            // exact body
	header map[string]string // exact header values
	within time.Duration     // the answer must come this fast (default 10 s)
}

// post is the head of an authenticated JSON POST to /v1/graphql.
func post(extra ...string) string {
	h := "POST /v1/graphql HTTP/1.1\r\nAuthorization: Bearer {{KEY}}\r\nContent-Type: application/json"
	for _, e := range extra {
		h += "\r\n" + e
	}
	return h
}

func withLength(head string, n int) string { return head + "\r\nContent-Length: " + strconv.Itoa(n) }

// gqlBody is a JSON request body for a GraphQL document.
func gqlBody(query string) string {
	return `{"query":` + strconv.Quote(query) + `}`
}

func aliasFlood(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, " a%d: bill(id:\"x\") { id }", i)
	}
	b.WriteString(" }")
	return b.String()
}

func deepSelection(n int) string {
	return "{" + strings.Repeat(" bills {", n) + " nextCursor" + strings.Repeat(" }", n) + " }"
}

func deepList(n int) string {
	return `{ bills(input:{q:` + strings.Repeat("[", n) + `"x"` + strings.Repeat("]", n) + `}) { nextCursor } }`
}

// zeros streams n bytes of a JSON string body without holding them.
func zeros(n int64, chunked bool) func(io.Writer) error {
	return func(w io.Writer) error {
		chunk := bytes.Repeat([]byte("a"), 64<<10)
		write := func(p []byte) error {
			if chunked {
				if _, err := fmt.Fprintf(w, "%x\r\n", len(p)); err != nil {
					return err
				}
			}
			if _, err := w.Write(p); err != nil {
				return err
			}
			if chunked {
				_, err := io.WriteString(w, "\r\n")
				return err
			}
			return nil
		}
		if err := write([]byte(`{"query":"`)); err != nil {
			return err
		}
		for sent := int64(10); sent < n-2; sent += int64(len(chunk)) {
			if err := write(chunk[:min(int64(len(chunk)), n-2-sent)]); err != nil {
				return err
			}
		}
		if err := write([]byte(`"}`)); err != nil {
			return err
		}
		if chunked {
			_, err := io.WriteString(w, "0\r\n\r\n")
			return err
		}
		return nil
	}
}

// trickle writes body one byte per gap (a slow-body client).
func trickle(body string, gap time.Duration) func(io.Writer) error {
	return func(w io.Writer) error {
		for i := range len(body) {
			if _, err := w.Write([]byte{body[i]}); err != nil {
				return err
			}
			time.Sleep(gap) // the client's own pace: this is the attack, not a wait for a condition
		}
		return nil
	}
}

const hundredMiB = 100 << 20

// corpus is the committed abuse corpus. Expectations are docs/api.md "Errors" bodies;
// the decisions for cases the design does not name are written in why.
func corpus() []hostile {
	okBills := gqlBody(`{ bill(id:"nope-1") { id } }`)
	const (
		okBillsAnswer = `{"data":{"bill":null}}`
		tooLarge      = `{"errors":[{"message":"Request body too large"}]}`
		bearer        = `{"errors":[{"message":"Request must not contain the bearer token"}]}`
		notFound      = `{"error":"Not Found"}`
		// Refusals at the HTTP layer come from Go's net/http server before any
		// handler runs; they are plain text by design of net/http and close the
		// connection. Nothing of the request reaches auth or the upstream.
		protoBad = "400 Bad Request"
	)
	return []hostile{
		{name: "alias flood", why: "1000 aliases: refused by the guard before the upstream, with the limit named",
			head: post(), body: gqlBody(aliasFlood(1000)), status: 200,
			want: `{"data":null,"errors":[{"message":"Document exceeds the maximum of 5000 tokens","locations":[{"line":1,"column":11710}],"extensions":{"code":"TOO_MANY_TOKENS"}}]}`},
		{name: "alias flood under token limit", why: "40 aliases of a cheap field: the alias limit (30) names itself",
			head: post(), body: gqlBody(aliasFlood(40)), status: 200,
			want: `{"data":null,"errors":[{"message":"Alias count 40 exceeds the maximum of 30","locations":[{"line":1,"column":1}],"extensions":{"code":"TOO_MANY_ALIASES"}},{"message":"Root field count 40 exceeds the maximum of 10","locations":[{"line":1,"column":1}],"extensions":{"code":"TOO_MANY_ROOT_FIELDS"}}]}`},
		{name: "deep selection 10000", why: "10 000 nested selections: refused as a document error, no stack overflow",
			head: post(), body: gqlBody(deepSelection(10000)), status: 200,
			want: `{"data":null,"errors":[{"message":"Document exceeds the maximum of 5000 tokens","locations":[{"line":1,"column":20001}],"extensions":{"code":"TOO_MANY_TOKENS"}}]}`},
		{name: "deep selection 13", why: "depth over 10 under the token limit: the depth limit names itself",
			head: post(), body: gqlBody(deepIntrospection(12)), status: 200,
			want: `{"data":null,"errors":[{"message":"Query depth 13 exceeds the maximum of 10","locations":[{"line":1,"column":1}],"extensions":{"code":"QUERY_TOO_DEEP"}}]}`},
		{name: "deep list value 10000", why: "a 10 000-deep list literal: refused, no stack overflow",
			head: post(), body: gqlBody(deepList(10000)), status: 200,
			want: `{"data":null,"errors":[{"message":"Document exceeds the maximum of 5000 tokens","locations":[{"line":1,"column":5010}],"extensions":{"code":"TOO_MANY_TOKENS"}}]}`},
		{name: "deep JSON variables 10000", why: "10 000-deep JSON nesting in variables",
			head: post(), body: `{"query":"{ bills { nextCursor } }","variables":{"a":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}}`, status: 400,
			want: `{"errors":[{"message":"Request body is not valid JSON: invalid character '[' exceeded max depth (at byte 10049)"}]}`},
		{name: "fragment cycle", why: "fragments spreading each other: a validation error, not a hang",
			head: post(), body: gqlBody(`query { ...A } fragment A on Query { ...B bills { nextCursor } } fragment B on Query { ...A }`), status: 200,
			want: `{"data":null,"errors":[{"message":"Cannot spread fragment \"A\" within itself via \"B\".","locations":[{"line":1,"column":91}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`},
		{name: "fragment fan-out", why: "fragments doubling at each level (2^30 fields once expanded)",
			head: post(), body: gqlBody(fanOut(30)), status: 200,
			want: `{"data":null,"errors":[{"message":"Root field count 1073741824 exceeds the maximum of 10","locations":[{"line":1,"column":1}],"extensions":{"code":"TOO_MANY_ROOT_FIELDS"}},{"message":"Query cost 1073741824 exceeds the maximum of 10000","locations":[{"line":1,"column":1}],"extensions":{"code":"QUERY_TOO_COMPLEX"}}]}`},
		{name: "batched array", why: "a JSON array of operations (batching) is not accepted: one operation per request",
			head: post(), body: `[` + okBills + `,` + okBills + `]`, status: 400,
			want: `{"errors":[{"message":"Request body must be a JSON object"}]}`},
		{name: "mutation", why: "only query operations are accepted (read-only service)",
			head: post(), body: gqlBody(`mutation { bills { nextCursor } }`), status: 200,
			want: `{"data":null,"errors":[{"message":"Schema does not support operation type \"mutation\"","locations":[{"line":1,"column":1}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`},
		{name: "subscription", why: "only query operations are accepted",
			head: post(), body: gqlBody(`subscription { bills { nextCursor } }`), status: 200,
			want: `{"data":null,"errors":[{"message":"Schema does not support operation type \"subscription\"","locations":[{"line":1,"column":1}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`},
		{name: "many operations", why: "400 named operations in one document, one selected",
			head: post(), body: `{"query":` + strconv.Quote(manyOps(400)) + `,"operationName":"Q399"}`, status: 200,
			want: `{"data":{"__typename":"Query"}}`},
		{name: "Int literal beyond 32 bits", why: "GraphQL's Int is 32 bits; gqlparser alone let it through and PostgreSQL's int4 answered 500",
			head: post(), body: gqlBody(`{ bills(input: {congress: 2170000000}) { nextCursor } }`), status: 200,
			want: `{"data":null,"errors":[{"message":"Int cannot represent non 32-bit signed integer value: 2170000000","locations":[{"line":1,"column":27}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`},
		{name: "Int variable beyond 32 bits", why: "a variable that does not coerce: docs/api.md Errors, 400",
			head: post(), body: `{"query":"query($c: Int) { bills(input: {congress: $c}) { nextCursor } }","variables":{"c":-9223372036854775808}}`, status: 400,
			want: `{"errors":[{"message":"Variable \"$c\" is invalid at variable.c: Int cannot represent non 32-bit signed integer value: -9223372036854775808"}]}`},
		{name: "operationName not in document", why: "docs/api.md Errors: 400",
			head: post(), body: `{"query":"query A { __typename }","operationName":"B"}`, status: 400,
			want: `{"errors":[{"message":"Unknown operation named \"B\""}]}`},
		{name: "100 MiB with length", why: "Content-Length over 128 KiB: refused before reading",
			head: withLength(post(), hundredMiB), stream: zeros(hundredMiB, false), status: 413,
			want: tooLarge},
		{name: "100 MiB chunked", why: "no Content-Length: refused after 128 KiB, the rest never read",
			head: post("Transfer-Encoding: chunked"), stream: zeros(hundredMiB, true), status: 413,
			want: tooLarge},
		{name: "slow body", why: "a body trickled at 1 byte/s must not hold a connection and a handler forever: " +
			"the gateway gives up after a body read timeout (≤ 10 s) with 408 Request Timeout in the §3.6 errors form",
			head: withLength(post(), len(okBills)), stream: trickle(okBills, time.Second), status: 408,
			want: `{"errors":[{"message":"Request body timed out"}]}`, within: 20 * time.Second},
		{name: "invalid UTF-8", why: "invalid UTF-8 in the document",
			head: post(), body: `{"query":"{ bills(input:{q:\"` + "\xff\xfe" + `\"}) { nextCursor } }"}`, status: 400,
			want: `{"errors":[{"message":"Request body is not valid UTF-8"}]}`},
		{name: "duplicate query key", why: "two query members: ambiguous, refused",
			head: post(), body: `{"query":"{ bills { nextCursor } }","query":"{ members { nextCursor } }"}`, status: 400,
			want: `{"errors":[{"message":"Request body has duplicate key \"query\""}]}`},
		{name: "huge variable", why: "a 120 KiB string variable used as a full-text query (under the body limit)",
			head: post(), body: `{"query":"query Q($q:String){ bills(input:{q:$q}) { nextCursor } }","variables":{"q":"` + strings.Repeat("lighthouse ", 11000) + `"}}`, status: 200,
			want: `{"errors":[{"message":"q must be at most 1000 bytes","path":["bills"],"locations":[{"line":1,"column":21}],"extensions":{"code":"BAD_USER_INPUT","field":"input.q"}}],"data":null}`},
		{name: "many variables", why: "5 000 undeclared variables (under the body limit) are ignored",
			head: post(), body: manyVars(5000), status: 200, want: okBillsAnswer},
		{name: "variables over the body limit", why: "20 000 variables make the body too large",
			head: post(), body: manyVars(20000), status: 413, want: tooLarge},
		{name: "token in variables", why: "the bearer token in a variable value",
			head: post(), body: `{"query":"query Q($q:String){ bills(input:{q:$q}) { nextCursor } }","variables":{"q":"x {{KEY}} y"}}`, status: 400,
			want: bearer},
		{name: "token as variable key", why: "the bearer token as a nested object key",
			head: post(), body: `{"query":"{ bills { nextCursor } }","variables":{"o":{"{{KEY}}":1}}}`, status: 400,
			want: bearer},
		{name: "token escaped in document", why: "the token spelled with JSON escapes inside a GraphQL string",
			head: post(), body: `{"query":"{ bills(input:{q:\"{{KEYESC}}\"}) { nextCursor } }"}`, status: 400,
			want: bearer},
		{name: "forged identity header", why: "a client-sent X-Civic-Identity is stripped, the request served",
			head: post("X-Civic-Identity: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJrZXlfeCIsInRpZXIiOiJlbnRlcnByaXNlIn0.AAAA"), body: okBills, status: 200, want: okBillsAnswer},
		{name: "CRLF in header value", why: "a bare CR inside a header value: refused at the HTTP layer",
			head: post("X-Note: a\rX-Civic-Identity: forged"), body: okBills, status: 400, want: protoBad},
		{name: "NUL in header value", why: "NUL in a header value: refused at the HTTP layer",
			head: post("X-Note: a\x00b"), body: okBills, status: 400, want: protoBad},
		{name: "bare LF header injection", why: "a bare LF ends a header line (as most servers read it): the injected " +
			"X-Civic-Identity is stripped like any client-sent one and the gateway's own assertion is used",
			head: post("X-Note: a\nX-Civic-Identity: forged"), body: okBills, status: 200, want: okBillsAnswer},
		{name: "CL and TE together", why: "request smuggling shape: Transfer-Encoding wins over Content-Length (RFC 9112 §6.3), " +
			"so the body is the empty chunked one; the gateway re-frames what it forwards, nothing is smuggled upstream",
			head: post("Transfer-Encoding: chunked", "Content-Length: 4"), body: "0\r\n\r\n", status: 400,
			want: `{"errors":[{"message":"Request body is empty"}]}`},
		{name: "oversized header", why: "a 2 MiB header: refused at the HTTP layer",
			head: post("X-Pad: " + strings.Repeat("p", 2<<20)), body: okBills, status: 431, want: "431 Request Header Fields Too Large"},
		{name: "many headers", why: "10 000 small headers: over the header limit",
			head: post(manyHeaders(10000)...), body: okBills, status: 431, want: "431 Request Header Fields Too Large"},
		{name: "bills dot-dot to graphql", why: "path traversal from /bills must not reach another route unauthenticated",
			head: "GET /bills/../v1/graphql HTTP/1.1", status: 401,
			want: `{"error":"Missing bearer token"}`},
		{name: "bills dot-dot with key", why: "/bills/../v1/graphql is /v1/graphql (RFC 3986 dot segments): its GET answer",
			head: "GET /bills/../v1/graphql HTTP/1.1\r\nAuthorization: Bearer {{FREE}}", status: 405,
			want: `{"errors":[{"message":"Method not allowed: use POST"}]}`, header: map[string]string{"Allow": "POST"}},
		{name: "bills dot-dot keeps entitlements", why: "a free key reaching GraphQL through /bills/.. is still held to its families",
			head: withLength("POST /bills/../v1/graphql HTTP/1.1\r\nAuthorization: Bearer {{FREE}}\r\nContent-Type: application/json", len(gqlBody(`{ regulatoryFilings { nextCursor } }`))),
			body: gqlBody(`{ regulatoryFilings { nextCursor } }`), status: 403, want: `{"error":"Tier not entitled to this endpoint family"}`},
		{name: "double slash bills", why: "//bills is not /bills",
			head: "GET //bills HTTP/1.1\r\nAuthorization: Bearer {{FREE}}", status: 404,
			want: notFound},
		{name: "encoded slash dot-dot", why: "/bills%2f.. is not /bills",
			head: "GET /bills%2f.. HTTP/1.1\r\nAuthorization: Bearer {{FREE}}", status: 404,
			want: notFound},
		{name: "upper-case BILLS", why: "paths are case-sensitive: /BILLS is not /bills",
			head: "GET /BILLS HTTP/1.1\r\nAuthorization: Bearer {{FREE}}", status: 404,
			want: notFound},
		{name: "encoded NUL", why: "/bills%00 is not /bills",
			head: "GET /bills%00 HTTP/1.1\r\nAuthorization: Bearer {{FREE}}", status: 404,
			want: notFound},
		{name: "encoded NUL in query", why: "a NUL in a parameter is a bad parameter, not a fault",
			head: "GET /bills?q=%00 HTTP/1.1\r\nAuthorization: Bearer {{FREE}}", status: 400,
			want: `{"errors":[{"message":"parameter \"q\": q must be valid UTF-8 text without NUL characters"}]}`},
		{name: "bills trailing slash", why: "/bills/ is not /bills",
			head: "GET /bills/ HTTP/1.1\r\nAuthorization: Bearer {{FREE}}", status: 404,
			want: notFound},
		{name: "absolute-form other host", why: "an absolute URI naming a host this gateway does not serve: 421 Misdirected " +
			"Request as JSON (RFC 9110 §15.5.20), never Caddy's empty 200 for an unmatched host",
			head: "GET http://evil.example/bills?limit=1 HTTP/1.1\r\nAuthorization: Bearer {{FREE}}", status: 421,
			want: `{"error":"Misdirected Request"}`},
		{name: "Host header other host", why: "TLS for localhost but Host: evil.example: as above",
			head: "GET /bills?limit=1 HTTP/1.1\r\nAuthorization: Bearer {{FREE}}\r\nHost: evil.example", status: 421,
			want: `{"error":"Misdirected Request"}`},
		{name: "bills duplicate limit", why: "a repeated parameter is refused",
			head: "GET /bills?limit=1&limit=2 HTTP/1.1\r\nAuthorization: Bearer {{FREE}}", status: 400,
			want: `{"errors":[{"message":"parameter \"limit\" must be given once"}]}`},
		{name: "bills POST", why: "GET only",
			head: withLength("POST /bills HTTP/1.1\r\nAuthorization: Bearer {{FREE}}\r\nContent-Type: application/json", 2), body: `{}`, status: 405,
			want: `{"errors":[{"message":"Use GET"}]}`},
	}
}

func manyOps(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "query Q%d { __typename } ", i)
	}
	return b.String()
}

func fanOut(n int) string {
	var b strings.Builder
	b.WriteString("query { ...F0 }")
	for i := range n {
		fmt.Fprintf(&b, " fragment F%d on Query { ...F%d ...F%d }", i, i+1, i+1)
	}
	fmt.Fprintf(&b, " fragment F%d on Query { bills { nextCursor } }", n)
	return b.String()
}

func deepIntrospection(n int) string {
	// __schema { types { fields { type { ofType { … } } } } }: valid at any depth.
	return "{ __schema { types { fields { type {" + strings.Repeat(" ofType {", n-4) + " name" + strings.Repeat(" }", n-4) + " } } } } }"
}

func manyVars(n int) string {
	var b strings.Builder
	b.WriteString(`{"query":"{ bill(id:\"nope-1\") { id } }","variables":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"v%d":%d`, i, i)
	}
	b.WriteString("}}")
	return b.String()
}

func manyHeaders(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("X-H%d: v", i)
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

// jsonEscapeAll spells every character of s as a \u escape.
func jsonEscapeAll(s string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, `\\u%04x`, r)
	}
	return b.String()
}
