package records

import (
	"reflect"
	"strings"
	"unicode/utf8"
)

// MaxTextLen bounds every string filter (bytes).
const MaxTextLen = 1000

// ValidateText checks every *string member of an input struct: valid UTF-8, no NUL byte (PostgreSQL text
// cannot hold one) and at most MaxTextLen bytes. The error names the member by its GraphQL name.
func ValidateText(in any) error {
	v := reflect.Indirect(reflect.ValueOf(in))
	if v.Kind() != reflect.Struct {
		return nil
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := v.Field(i)
		var s string
		switch {
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.String && !f.IsNil():
			s = f.Elem().String()
		case f.Kind() == reflect.String:
			s = f.String()
		default:
			continue
		}
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return inputErrorf(name, "%s must be valid UTF-8 text without NUL characters", name)
		}
		if len(s) > MaxTextLen {
			return inputErrorf(name, "%s must be at most %d bytes", name, MaxTextLen)
		}
	}
	return nil
}
