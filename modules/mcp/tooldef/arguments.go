package tooldef

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Arguments are checked here, before anything is sent upstream, against the
// shapes the input schema was generated from (inputschema.go), and only ever
// become GraphQL variables: the document sent is the manifest's, byte for
// byte. A value is never echoed in an error (an argument may hold a key);
// errors name the argument path (input.items[2].name).
//
// jsonschema-go validates the same schemas (arguments_test.go checks that it
// accepts and refuses exactly what this checker does), but its errors quote
// the offending value and name schema paths, not argument paths, so the
// gateway answers with its own.

// ArgumentError is a tools/call argument the tool's input schema refuses.
type ArgumentError struct {
	// Path is the argument path: a variable, then .field and [index] steps;
	// "" for the arguments object itself.
	Path   string
	Reason string
}

func (e *ArgumentError) Error() string {
	if e.Path == "" {
		return "arguments: " + e.Reason
	}
	return fmt.Sprintf("argument %q %s", e.Path, e.Reason)
}

// pathElem is one step of an argument path, kept on the stack while
// checking; a path string is built only for an error.
type pathElem struct {
	parent *pathElem
	name   string // a variable or field; "" for a list index
	index  int
}

func (p *pathElem) String() string {
	if p == nil {
		return ""
	}
	var steps []*pathElem
	for q := p; q != nil; q = q.parent {
		steps = append(steps, q)
	}
	var b strings.Builder
	for i := len(steps) - 1; i >= 0; i-- {
		q := steps[i]
		switch {
		case q.name == "":
			b.WriteString("[" + strconv.Itoa(q.index) + "]")
		case b.Len() > 0:
			b.WriteString("." + q.name)
		default:
			b.WriteString(q.name)
		}
	}
	return b.String()
}

func argErr(p *pathElem, format string, args ...any) *ArgumentError {
	return &ArgumentError{Path: p.String(), Reason: fmt.Sprintf(format, args...)}
}

// Variables checks a tools/call arguments object against the tool's input
// schema and returns the GraphQL variables to send: the arguments as
// decoded (an Int written 1.0 or 1e0 is sent as 1). Absent or null
// arguments are an empty object. A refusal is an *ArgumentError.
func (t *Tool) Variables(arguments json.RawMessage) (json.RawMessage, error) {
	args, err := decodeArguments(arguments)
	if err != nil {
		return nil, err
	}
	if err := checkObject(args, t.vars, nil, ""); err != nil {
		return nil, err
	}
	out, err := json.Marshal(args)
	if err != nil { // only checked JSON values are left
		return nil, fmt.Errorf("tooldef: encoding variables: %w", err)
	}
	return out, nil
}

func decodeArguments(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &ArgumentError{Reason: "not valid JSON"}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &ArgumentError{Reason: "not valid JSON (data after the object)"}
	}
	args, ok := v.(map[string]any)
	if !ok {
		return nil, &ArgumentError{Reason: "must be a JSON object"}
	}
	return args, nil
}

// checkObject checks the members of an object against fields, replacing
// each value by its checked form. owner names the input object ("" for the
// tool's arguments).
func checkObject(obj map[string]any, fields []inputField, p *pathElem, owner string) error {
	known := 0
	for i := range fields {
		if _, ok := obj[fields[i].name]; ok {
			known++
		}
	}
	if known != len(obj) {
		return unknownMember(obj, fields, p, owner)
	}
	for i := range fields {
		f := &fields[i]
		v, present := obj[f.name]
		fp := &pathElem{parent: p, name: f.name}
		if !present {
			if f.required {
				return argErr(fp, "is required")
			}
			continue
		}
		checked, err := f.typ.check(v, fp)
		if err != nil {
			return err
		}
		obj[f.name] = checked
	}
	return nil
}

// unknownMember reports the first member (in name order) that is not a
// field. Its name is repeated only when it is a short GraphQL name: a long
// one may be a key pasted in the wrong place.
func unknownMember(obj map[string]any, fields []inputField, p *pathElem, owner string) error {
	var unknown []string
	for name := range obj {
		if !slices.ContainsFunc(fields, func(f inputField) bool { return f.name == name }) {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	what := "an unknown member"
	if name := unknown[0]; len(name) <= 32 && isGraphQLName(name) {
		what = strconv.Quote(name)
	}
	if owner == "" {
		names := make([]string, len(fields))
		for i, f := range fields {
			names[i] = f.name
		}
		list := strings.Join(names, ", ")
		if list == "" {
			list = "none"
		}
		return &ArgumentError{Reason: fmt.Sprintf("%s is not an argument of this tool (arguments: %s)", what, list)}
	}
	return argErr(p, "has %s, which is not a field of %s", what, owner)
}

func isGraphQLName(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i], i == 0) {
			return false
		}
	}
	return s != ""
}

// check checks one decoded JSON value against t and returns it in the form
// sent upstream.
func (t *argType) check(v any, p *pathElem) (any, error) {
	if v == nil {
		if t.nonNull {
			return nil, argErr(p, "must not be null")
		}
		return nil, nil
	}
	switch t.kind {
	case kindInt:
		n, ok := v.(json.Number)
		if !ok {
			return nil, argErr(p, "must be an integer")
		}
		i, ok := int32Of(n)
		if !ok {
			return nil, argErr(p, "must be an integer from %d to %d", minInt, maxInt)
		}
		return json.Number(strconv.FormatInt(i, 10)), nil
	case kindFloat:
		n, ok := v.(json.Number)
		if !ok {
			return nil, argErr(p, "must be a number")
		}
		if _, err := strconv.ParseFloat(string(n), 64); err != nil {
			return nil, argErr(p, "must be a number within the range of a 64-bit float")
		}
		return n, nil
	case kindString:
		if _, ok := v.(string); !ok {
			return nil, argErr(p, "must be a string")
		}
		return v, nil
	case kindBoolean:
		if _, ok := v.(bool); !ok {
			return nil, argErr(p, "must be true or false")
		}
		return v, nil
	case kindEnum:
		s, ok := v.(string)
		if !ok || !slices.Contains(t.values, s) {
			return nil, argErr(p, "must be one of %s", enumList(t.values))
		}
		return v, nil
	case kindList:
		list, ok := v.([]any)
		if !ok {
			return nil, argErr(p, "must be an array")
		}
		for i, e := range list {
			checked, err := t.elem.check(e, &pathElem{parent: p, index: i})
			if err != nil {
				return nil, err
			}
			list[i] = checked
		}
		return list, nil
	case kindObject:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, argErr(p, "must be an object (%s)", t.object.name)
		}
		if err := checkObject(obj, t.object.fields, p, t.object.name); err != nil {
			return nil, err
		}
		return obj, nil
	}
	return v, nil // kindAny: a custom scalar, checked by the GraphQL server
}

// int32Of reads an integer-valued JSON number within int32: 7, -0, 7.0 and
// 7e0 are all 7 (JSON Schema's integer is any number without a fraction).
// A number that is not a plain integer is read as a 64-bit float, as
// jsonschema-go reads it (never as an exact rational: 1e-999999999 would
// cost a billion digits).
func int32Of(n json.Number) (int64, bool) {
	if i, err := strconv.ParseInt(string(n), 10, 32); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != math.Trunc(f) || f < minInt || f > maxInt {
		return 0, false
	}
	return int64(f), true
}

func enumList(values []string) string {
	const max = 20
	if len(values) <= max {
		return strings.Join(values, ", ")
	}
	return strings.Join(values[:max], ", ") + fmt.Sprintf(" (and %d more)", len(values)-max)
}
