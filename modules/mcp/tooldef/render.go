package tooldef

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool call's answer is what the handler chain answered its GraphQL
// request, in one of the gateway's three body shapes (docs/design.md D10):
//
//	{"data":{…}}                  → structuredContent: the data object; text: the same JSON, compact
//	{"data":…,"errors":[…]}       → a tool error: each error's message, its code and path
//	{"errors":[…]} (4xx)          → the same
//	{"error":"…"} (401…504)       → a tool error: the gateway's message, the status, Retry-After
//	anything else                 → a tool error naming the HTTP status only
//
// Nothing else of an error reaches the caller: not its extensions but a
// code, not its locations, never a body that is not one of these shapes (an
// upstream's HTML error page, a stack trace). A result with errors carries no
// structuredContent, even with partial data: it would not match the output
// schema.

const (
	maxErrorsShown   = 5
	maxMessageLength = 300
)

type responseError struct {
	Message    string `json:"message"`
	Path       []any  `json:"path"`
	Extensions struct {
		Code any `json:"code"`
	} `json:"extensions"`
}

// Result renders the HTTP status, body and Retry-After header of the answer
// to a tool call's GraphQL request as its tools/call result.
func Result(status int, body []byte, retryAfter string) *mcp.CallToolResult {
	var r struct {
		Data   json.RawMessage `json:"data"`
		Errors []responseError `json:"errors"`
		Error  *string         `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return errorResult(fmt.Sprintf("The GraphQL endpoint answered HTTP %d without a GraphQL result.", status))
	}
	switch {
	case len(r.Errors) > 0:
		return errorResult(errorsText(r.Errors))
	case r.Error != nil:
		text := clipMessage(*r.Error) + " (HTTP " + strconv.Itoa(status)
		if secs, err := strconv.Atoi(strings.TrimSpace(retryAfter)); err == nil && secs >= 0 {
			text += "; retry after " + strconv.Itoa(secs) + " s"
		}
		return errorResult(text + ")")
	case status != 200:
		return errorResult(fmt.Sprintf("The GraphQL endpoint answered HTTP %d without a GraphQL result.", status))
	}
	data := bytes.TrimSpace(r.Data)
	if len(data) == 0 || data[0] != '{' {
		return errorResult("The GraphQL endpoint answered without data.")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil { // Unmarshal checked it
		return errorResult("The GraphQL endpoint answered without data.")
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: compact.String()}},
		StructuredContent: json.RawMessage(compact.Bytes()),
	}
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
}

// errorsText lists the first errors: message, code, path.
func errorsText(errs []responseError) string {
	var b strings.Builder
	if len(errs) == 1 {
		b.WriteString("GraphQL error: ")
	} else {
		b.WriteString("GraphQL errors:")
	}
	for i, e := range errs {
		if i == maxErrorsShown {
			fmt.Fprintf(&b, "\n- (and %d more)", len(errs)-maxErrorsShown)
			break
		}
		if len(errs) > 1 {
			b.WriteString("\n- ")
		}
		msg := clipMessage(e.Message)
		if msg == "" {
			msg = "(no message)"
		}
		b.WriteString(msg)
		var notes []string
		if code, ok := e.Extensions.Code.(string); ok && isErrorCode(code) {
			notes = append(notes, "code "+code)
		}
		if p := pathText(e.Path); p != "" {
			notes = append(notes, "at "+p)
		}
		if len(notes) > 0 {
			b.WriteString(" (" + strings.Join(notes, ", ") + ")")
		}
	}
	return b.String()
}

// isErrorCode accepts the upper-case codes GraphQL servers use
// (BAD_USER_INPUT); anything else is not repeated.
func isErrorCode(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// pathText joins a GraphQL error path: bills.items.3.title.
func pathText(path []any) string {
	parts := make([]string, 0, len(path))
	for _, p := range path {
		switch p := p.(type) {
		case string:
			if !isGraphQLName(p) {
				return ""
			}
			parts = append(parts, p)
		case float64:
			parts = append(parts, strconv.FormatFloat(p, 'f', -1, 64))
		default:
			return ""
		}
	}
	return strings.Join(parts, ".")
}

// clipMessage keeps one line of at most maxMessageLength bytes.
func clipMessage(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxMessageLength {
		return s
	}
	cut := maxMessageLength
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
