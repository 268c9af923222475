package document

import (
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/lexer"
)

// tokenScan is the result of the cheap lexical pass that runs before parsing.
type tokenScan struct {
	count int
	// over is the position of the first token beyond the limit (count is
	// then limit+1 and the scan stopped there).
	over *ast.Position
	// strings are the decoded values of the document's string literals, so
	// an escaped bearer token ("\u0063g_…") is still found (docs/api.md "Authentication").
	strings []string
}

// scanTokens counts the lexical tokens of query (comments excluded) in one
// linear pass, stopping after limit+1 tokens when stopAtLimit is set. A lexical
// error ends the scan; the parser reports it.
func scanTokens(query string, limit int, stopAtLimit bool) tokenScan {
	var s tokenScan
	lx := lexer.New(&ast.Source{Input: query})
	for {
		tok, err := lx.ReadToken()
		if err != nil || tok.Kind == lexer.EOF {
			return s
		}
		switch tok.Kind {
		case lexer.Comment:
			continue
		case lexer.String, lexer.BlockString:
			if tok.Value != "" {
				s.strings = append(s.strings, tok.Value)
			}
		}
		s.count++
		if s.count > limit && s.over == nil {
			pos := tok.Pos
			s.over = &pos
			if stopAtLimit {
				return s
			}
		}
	}
}
