package readplan

import (
	"math"
	"strconv"
	"unsafe"
)

// The bytes recordsd answers are gqlgen's marshalling passed through encoding/json (httpapi.writeResponse
// marshals the response, whose data is a json.RawMessage: compacted, with <, >, &, U+2028 and U+2029
// escaped). appendString writes a string as that pipeline leaves it.

const upperHex = "0123456789ABCDEF" // gqlgen's writeQuotedString
const lowerHex = "0123456789abcdef" // encoding/json's HTML escaping

// appendString appends s as a JSON string exactly as gqlgen's writeQuotedString followed by encoding/json's
// HTML-escaping compaction would write it. Bytes that are not valid UTF-8 pass through unchanged, as in both.
func appendString[T string | []byte](dst []byte, s T) []byte {
	switch v := any(s).(type) {
	case string:
		// A read-only view of the string's bytes: appendQuoted reads them and never keeps them.
		return appendQuoted(dst, unsafe.Slice(unsafe.StringData(v), len(v)))
	default:
		return appendQuoted(dst, v.([]byte))
	}
}

func appendQuoted(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; ; {
		// A tight loop of one table load per plain byte: a switch of ten tests per byte was the largest cost of
		// rendering a page.
		for i < len(s) && !needsLook[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		c := s[i]
		var esc string
		switch {
		case c == '\t':
			esc = `\t`
		case c == '\r':
			esc = `\r`
		case c == '\n':
			esc = `\n`
		case c == '\\':
			esc = `\\`
		case c == '"':
			esc = `\"`
		case c < 0x20:
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', upperHex[c>>4], upperHex[c&0xf])
			i++
			start = i
			continue
		case c == '<' || c == '>' || c == '&':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&0xf])
			i++
			start = i
			continue
		case c == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2]&^1 == 0xA8: // U+2028, U+2029
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', lowerHex[s[i+2]&0xf])
			i += 3
			start = i
			continue
		default: // 0xE2 starting another character
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		dst = append(dst, esc...)
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// needsLook marks the bytes appendString cannot copy without a look: control characters, '"', '\\', the
// HTML characters, and 0xE2, which may start U+2028 or U+2029.
var needsLook = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	for _, c := range []byte{'"', '\\', '<', '>', '&', 0xE2} {
		t[c] = true
	}
	return t
}()

// appendFloat writes a decimal's text as gqlgen's MarshalFloatContext writes the float64 pgx scans from it
// (pgtype.Numeric.Float64Value: the correctly rounded float64, then fmt's %g). NaN and infinities, which gqlgen
// answers with a field error, are ErrNotCovered.
func appendFloat(dst, text []byte) ([]byte, error) {
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, ErrNotCovered
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64), nil
}

// rowArena keeps a read's rows: every value's bytes in one buffer, addressed by offsets (-1: NULL).
type rowArena struct {
	width int
	data  []byte
	spans [][2]int32
	rows  int
}

func (a *rowArena) Reset() {
	a.data, a.spans, a.rows = a.data[:0], a.spans[:0], 0
}

func (a *rowArena) Row(vals [][]byte) error {
	a.width = len(vals)
	for _, v := range vals {
		if v == nil {
			a.spans = append(a.spans, [2]int32{-1, -1})
			continue
		}
		start := int32(len(a.data))
		a.data = append(a.data, v...)
		a.spans = append(a.spans, [2]int32{start, int32(len(a.data))})
	}
	a.rows++
	return nil
}

// nestedRows keeps the rows of a page's nested lists (Member.terms): every item's rows together, each item's
// range of rows in ranges (a store.TermSink).
type nestedRows struct {
	rowArena
	ranges [][2]int32 // by item: [first, end) rows
}

func (n *nestedRows) Reset() {
	n.rowArena.Reset()
	n.ranges = n.ranges[:0]
}

// Term adds a row of item's list; an item's rows arrive together.
func (n *nestedRows) Term(item int, vals [][]byte) error {
	for len(n.ranges) <= item {
		n.ranges = append(n.ranges, [2]int32{})
	}
	row := int32(n.rows)
	switch rg := &n.ranges[item]; {
	case rg[0] == rg[1]:
		*rg = [2]int32{row, row + 1}
	case rg[1] == row:
		rg[1]++
	default:
		return errSplitList
	}
	return n.Row(vals)
}

// of is item's range of rows.
func (n *nestedRows) of(item int) (first, end int) {
	if item >= len(n.ranges) {
		return 0, 0
	}
	return int(n.ranges[item][0]), int(n.ranges[item][1])
}

// value is row r's value i; null reports NULL.
func (a *rowArena) value(r, i int) (v []byte, null bool) {
	sp := a.spans[r*a.width+i]
	if sp[0] < 0 {
		return nil, true
	}
	return a.data[sp[0]:sp[1]], false
}

// appendObject writes row r of a as the object o; nested holds the rows of its nested lists.
func (o *objectPlan) appendObject(dst []byte, a *rowArena, r int, nested *nestedRows) ([]byte, error) {
	dst = append(dst, '{')
	for i := range o.entries {
		e := &o.entries[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, e.key...)
		switch e.kind {
		case entryTypename:
			dst = appendString(dst, e.typeName)
		case entryColumn:
			v, null := a.value(r, e.value)
			switch {
			case null && e.nullable:
				dst = append(dst, "null"...)
			case null:
				return dst, errNullColumn
			case e.format == asBare:
				dst = append(dst, v...)
			case e.format == asFloat:
				var err error
				if dst, err = appendFloat(dst, v); err != nil {
					return dst, err
				}
			case e.format == asStrings:
				var err error
				if dst, err = appendStrings(dst, v); err != nil {
					return dst, err
				}
			default:
				dst = appendString(dst, v)
			}
		case entryAgencies:
			v, _ := a.value(r, e.value)
			var err error
			if dst, err = e.items.appendAgencies(dst, v); err != nil {
				return dst, err
			}
		case entryActivities:
			v, _ := a.value(r, e.value)
			var err error
			if dst, err = e.items.appendActivities(dst, v); err != nil {
				return dst, err
			}
		case entryNested:
			dst = append(dst, '[')
			first, end := nested.of(r)
			for i := first; i < end; i++ {
				if i > first {
					dst = append(dst, ',')
				}
				var err error
				if dst, err = e.items.appendObject(dst, &nested.rowArena, i, nil); err != nil {
					return dst, err
				}
			}
			dst = append(dst, ']')
		default:
			return dst, errBadEntry
		}
	}
	return append(dst, '}'), nil
}

// appendPage writes a page whose items are a's rows (and nested's, their lists).
func (o *objectPlan) appendPage(dst []byte, a *rowArena, nested *nestedRows, next *string) ([]byte, error) {
	dst = append(dst, '{')
	for i := range o.entries {
		e := &o.entries[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, e.key...)
		switch e.kind {
		case entryTypename:
			dst = appendString(dst, e.typeName)
		case entryNextCursor:
			if next == nil {
				dst = append(dst, "null"...)
			} else {
				dst = appendString(dst, *next)
			}
		case entryItems:
			dst = append(dst, '[')
			for r := 0; r < a.rows; r++ {
				if r > 0 {
					dst = append(dst, ',')
				}
				var err error
				if dst, err = e.items.appendObject(dst, a, r, nested); err != nil {
					return dst, err
				}
			}
			dst = append(dst, ']')
		default:
			return dst, errBadEntry
		}
	}
	return append(dst, '}'), nil
}
