package denyable

import (
	"strings"
	"testing"
)

func TestValueProblem(t *testing.T) {
	for v, want := range map[string]string{
		"auth0|user-1":                       "",
		"ünïcode|subject":                    "",
		strings.Repeat("a", MaxValueLen):     "",
		"":                                   "is empty",
		strings.Repeat("a", 600):             "is 600 bytes long; at most 512 are allowed",
		strings.Repeat("ü", MaxValueLen/2+1): "is 514 bytes long; at most 512 are allowed",
		"auth0|\tuser":                       "holds a control character",
		"a\x00b":                             "holds a control character",
		"a\x7fb":                             "holds a control character",
		"a\xffb":                             "is not valid UTF-8",
	} {
		if got := ValueProblem(v); got != want {
			t.Errorf("ValueProblem(%.40q) = %q, want %q", v, got, want)
		}
	}
}

func TestTextProblemBounds(t *testing.T) {
	if got := TextProblem("", 0, 10); got != "" {
		t.Errorf("an optional empty text: %q", got)
	}
	if got := TextProblem("0123456789x", 0, 10); got != "is 11 bytes long; at most 10 are allowed" {
		t.Errorf("one byte past the bound: %q", got)
	}
}
