package tooldef

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func manifestOf(t *testing.T, ops ...any) []byte {
	t.Helper()
	data, err := json.Marshal(map[string]any{"format": FormatApollo, "version": 1, "operations": ops})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseManifest(t *testing.T) {
	q := entry("Books", "query", `query Books { books { id } }`)
	q.Title, q.Description = "Books", "Lists books."
	q.Arguments = map[string]string{}
	no := false
	hidden := entry("Hidden", "query", `query Hidden { stats }`)
	hidden.Tool = &no
	yes := true
	add := entry("AddBook", "mutation", `mutation AddBook { removeBook(id: "1") }`)
	add.Tool = &yes
	plain := entry("Remove", "mutation", `mutation Remove { removeBook(id: "1") }`)
	sub := entry("Live", "subscription", `subscription Live { bookAdded { id } }`)
	upper := entry("Upper", "query", `query Upper { stats }`)
	upper.ID = "sha256:" + strings.ToUpper(upper.ID)

	entries, err := ParseManifest(manifestOf(t, q, hidden, add, plain, sub, upper))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 6 || entries[0].Title != "Books" || entries[0].Description != "Lists books." {
		t.Fatalf("entries = %+v", entries)
	}
	for i, want := range []bool{true, false, true, false, false, true} {
		if got := entries[i].IsTool(); got != want {
			t.Errorf("%s (%s): IsTool = %v, want %v", entries[i].Name, entries[i].Type, got, want)
		}
	}
}

func TestParseManifestRefusals(t *testing.T) {
	const secretBody = `query Secret { books { title } } # body-text-never-in-errors`
	good := entry("Secret", "query", secretBody)
	withMember := func(k string, v any) map[string]any {
		m := map[string]any{"id": good.ID, "name": good.Name, "type": good.Type, "body": good.Body}
		m[k] = v
		return m
	}
	yes := true
	sub := entry("Live", "subscription", `subscription Live { bookAdded { id } }`)
	sub.Tool = &yes
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"not json":        {[]byte(`{"format":`), "not a JSON object"},
		"plain map":       {[]byte(`{"sha256:00": "query { a }"}`), `no "format" member`},
		"other format":    {[]byte(`{"format":"relay","version":1,"operations":[]}`), `unknown format "relay"`},
		"version 2":       {[]byte(`{"format":"apollo-persisted-query-manifest","version":2,"operations":[]}`), "unsupported version 2"},
		"no operations":   {[]byte(`{"format":"apollo-persisted-query-manifest","version":1}`), `no "operations" member`},
		"unknown member":  {manifestOf(t, withMember("descripton", "typo")), `unknown field "descripton"`},
		"bad hash":        {manifestOf(t, withMember("id", strings.Repeat("0", 64))), "the body's SHA-256 is " + good.ID + ", not the id"},
		"custom id":       {manifestOf(t, withMember("id", "books-v1")), "id is not a SHA-256 hash"},
		"no name":         {manifestOf(t, withMember("name", "")), "no name"},
		"fragment type":   {manifestOf(t, withMember("type", "fragment")), `type "fragment" is not query, mutation or subscription`},
		"subscription":    {manifestOf(t, sub), "a subscription cannot be a tool"},
		"tool not a bool": {manifestOf(t, withMember("tool", "yes")), "operations[0]"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseManifest(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if !errors.Is(err, ErrInvalidManifest) {
				t.Errorf("err does not wrap ErrInvalidManifest: %v", err)
			}
			if strings.Contains(err.Error(), "body-text-never-in-errors") {
				t.Errorf("the error repeats the body: %v", err)
			}
		})
	}
}

func TestReadManifestFile(t *testing.T) {
	if _, err := ReadManifestFile("testdata/does-not-exist.json"); err == nil {
		t.Fatal("a missing file loaded")
	}
	entries, err := ReadManifestFile(recordsManifest)
	if err != nil || len(entries) == 0 {
		t.Fatalf("%s: %d entries, %v", recordsManifest, len(entries), err)
	}
}
