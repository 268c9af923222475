package tooldef

import (
	"fmt"
	"strings"
)

// MaxToolNameLength is the MCP bound on a tool name (specification
// 2025-11-25, "Tool names").
const MaxToolNameLength = 128

// ToolName converts a GraphQL operation name to its MCP tool name, in
// snake_case: an underscore goes before an upper-case letter that follows a
// lower-case letter or a digit, or that follows an upper-case letter and
// comes before a lower-case one, and every letter is lower-cased
// (SearchBills → search_bills, billByID → bill_by_id, GetHTTPStatus →
// get_http_status; a name already in snake_case stays as it is). A GraphQL
// name ([_A-Za-z][_0-9A-Za-z]*) holds only characters MCP allows in a tool
// name, so nothing else changes; the result must still be at most 128
// characters, and two operations with one tool name are a load error.
func ToolName(operation string) (string, error) {
	if operation == "" {
		return "", fmt.Errorf("an anonymous operation has no tool name")
	}
	var b strings.Builder
	b.Grow(len(operation) + 4)
	for i := 0; i < len(operation); i++ {
		c := operation[i]
		if !isNameByte(c, i == 0) {
			return "", fmt.Errorf("operation name %q is not a GraphQL name", clip(operation))
		}
		if isUpper(c) && i > 0 {
			prev := operation[i-1]
			nextLower := i+1 < len(operation) && isLower(operation[i+1])
			if isLower(prev) || isDigit(prev) || (isUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		if isUpper(c) {
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	name := b.String()
	if len(name) > MaxToolNameLength {
		return "", fmt.Errorf("tool name of operation %q is %d characters, over the MCP bound of %d", clip(operation), len(name), MaxToolNameLength)
	}
	return name, nil
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isNameByte(c byte, first bool) bool {
	return c == '_' || isUpper(c) || isLower(c) || (!first && isDigit(c))
}
