package request

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestURLAliasesGraphQL: which URL parameter names make a request Aliased
// (docs/design.md D40).
func TestURLAliasesGraphQL(t *testing.T) {
	for _, c := range []struct {
		raw       string
		get, post bool // Aliased on a GET, on a POST
	}{
		{"query=a&variables=%7B%7D&operationName=B&extensions=%7B%7D&documentId=x", false, true},
		{"trace=1&_=2", false, false},
		{"", false, false},
		{"vari%61bles=1", true, true},
		{"%71uery=1", true, true},
		{"Variables=1", true, true},
		{"OPERATIONNAME=1", true, true},
		{"variables[]=1", true, true},
		{"variables%5Ba%5D=1", true, true},
		{"variables%00=1", true, true},
		{"+variables=1", true, true},
		{"variables%20=1", true, true},
		{"a=1;variables=1", false, true},
		{"a=1;Variables=1", true, true},
		{"vari%6=1", true, true}, // does not decode
		{"variablesx=1&queryy=2", false, false},
	} {
		if got := urlAliasesGraphQL(c.raw, false); got != c.get {
			t.Errorf("GET ?%s: Aliased %v, want %v", c.raw, got, c.get)
		}
		if got := urlAliasesGraphQL(c.raw, true); got != c.post {
			t.Errorf("POST ?%s: Aliased %v, want %v", c.raw, got, c.post)
		}
	}
}

// TestDecodeRequestKeepsMembersAsSent: the slow path publishes variables
// and extensions byte for byte and flags escaped member names.
func TestDecodeRequestKeepsMembersAsSent(t *testing.T) {
	req, err := decodeRequest([]byte(`{"query":"{a}", "variables" :  {"b":2, "a":1} ,"extensions":null}`))
	if err != nil || string(req.RawVariables) != `{"b":2, "a":1}` || string(req.RawExtensions) != `null` || req.EscapedName {
		t.Fatalf("got %q %q %v %v", req.RawVariables, req.RawExtensions, req.EscapedName, err)
	}
	req, err = decodeRequest([]byte(`{"query":"{a}","vari\u0061bles":{"a":1}}`))
	if err != nil || string(req.RawVariables) != `{"a":1}` || !req.EscapedName {
		t.Fatalf("escaped name: got %q %v %v", req.RawVariables, req.EscapedName, err)
	}
}

// TestPublishedQueryIsDecodedOnDemand: a query with escapes is published as
// sent (no copy) and QueryText decodes it.
func TestPublishedQueryIsDecodedOnDemand(t *testing.T) {
	body := []byte(`{"query":"query Q {\n  a(s: \"x\")\n}","operationName":"Q"}`)
	rq, fast := scanRequest(body)
	if !fast {
		t.Fatal("not the fast path")
	}
	l := Located{raw: rq, fast: true}
	p := l.Published(httptest.NewRequest(http.MethodPost, "/", nil))
	text, err := p.QueryText()
	if !p.QueryEscaped || err != nil || text != "query Q {\n  a(s: \"x\")\n}" || string(p.OperationName) != "Q" {
		t.Fatalf("got %q escaped %v, %q %v", text, p.QueryEscaped, p.OperationName, err)
	}
}
