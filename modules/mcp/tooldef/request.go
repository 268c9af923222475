package tooldef

import "encoding/json"

// Request returns the GraphQL-over-HTTP POST body a tools/call sends through
// the handler chain: {"query","operationName","variables"}, the query being
// the manifest's document byte for byte (a trusted document to the guard)
// and the variables the checked arguments (Variables). Arguments never
// become part of the document: a string argument that holds a GraphQL
// document, or a key, is a variable's value and nothing more. A refusal is
// an *ArgumentError, returned before anything is sent.
func (t *Tool) Request(arguments json.RawMessage) ([]byte, error) {
	vars, err := t.Variables(arguments)
	if err != nil {
		return nil, err
	}
	body := make([]byte, 0, len(t.bodyPrefix)+len(vars)+1)
	body = append(body, t.bodyPrefix...)
	body = append(body, vars...)
	return append(body, '}'), nil
}
