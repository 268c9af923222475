package tooldef

import (
	"strings"
	"testing"
)

func TestToolName(t *testing.T) {
	for op, want := range map[string]string{
		"SearchBills":          "search_bills",
		"searchBills":          "search_bills",
		"search_bills":         "search_bills",
		"billByID":             "bill_by_id",
		"GetHTTPStatus":        "get_http_status",
		"HTTP":                 "http",
		"Bill2Text":            "bill2_text",
		"v2Bills":              "v2_bills",
		"_private":             "_private",
		"A":                    "a",
		"listMembersByUSState": "list_members_by_us_state",
	} {
		got, err := ToolName(op)
		if err != nil || got != want {
			t.Errorf("ToolName(%q) = %q, %v; want %q", op, got, err, want)
		}
	}
}

func TestToolNameRefusals(t *testing.T) {
	for _, op := range []string{"", "2fast", "with-dash", "spa ce", strings.Repeat("a", 129)} {
		if got, err := ToolName(op); err == nil {
			t.Errorf("ToolName(%q) = %q, want an error", op, got)
		}
	}
	// 128 characters is the MCP bound, and allowed.
	if _, err := ToolName(strings.Repeat("a", 128)); err != nil {
		t.Errorf("a 128-character name: %v", err)
	}
	// A name that grows past the bound by its underscores.
	if _, err := ToolName(strings.Repeat("aB", 50)); err == nil {
		t.Error("aBaB… (100 characters, 149 in snake_case) was accepted")
	}
}

// Two operations whose names convert to one tool name are a load error
// naming both.
func TestToolNameCollision(t *testing.T) {
	_, err := loadLibrary(t,
		entry("BookByID", "query", `query BookByID($id: ID!) { node(id: $id) { id } }`),
		entry("bookById", "query", `query bookById($id: ID!) { node(id: $id) { id } }`),
	)
	if err == nil || !strings.Contains(err.Error(), `tool name "book_by_id" is also the name of operation "BookByID"`) {
		t.Fatalf("err = %v", err)
	}
}
