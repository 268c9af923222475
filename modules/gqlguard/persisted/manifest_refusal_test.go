package persisted_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/modules/gqlguard/persisted"
)

const suffix = ": invalid trusted-documents manifest"

// secretBody stands for a document's text: no refusal may repeat it.
const secretBody = "query Me { me { secretField } }"

func TestManifestRefusals(t *testing.T) {
	q := hexOf(bodyQuery)
	op := func(id, name, typ, body string) string {
		return `{"id":"` + id + `","name":"` + name + `","type":"` + typ + `","body":"` + body + `"}`
	}
	apollo := func(ops ...string) string {
		return `{"format":"apollo-persisted-query-manifest","version":1,"operations":[` + strings.Join(ops, ",") + `]}`
	}
	for _, tc := range []struct{ name, content, want string }{
		// the file's shape
		{"empty file", ``, "persisted: manifest: the file is empty"},
		{"white space only", " \n", "persisted: manifest: the file is empty"},
		{"not an object", `[]`, "persisted: manifest: want a JSON object at byte offset 0"},
		{"trailing comma", `{"a": "b",}`, "persisted: manifest: invalid JSON at byte offset 10: invalid character '}' looking for beginning of object key string"},
		{"truncated", `{"a": "b"`, "persisted: manifest: invalid JSON at byte offset 9: unexpected end of file"},
		{"data after the object", `{"a": "{ b }"} {}`, "persisted: manifest: invalid JSON at byte offset 15: data after the top-level object"},
		{"neither format", `{"a": 1}`, `persisted: manifest: no "format" member, and the value of "a" is not a string (not a plain id→body map)`},
		// the Apollo envelope
		{"unknown format", `{"format":"relay","version":1,"operations":[]}`, `persisted: manifest: unknown format "relay" (want "apollo-persisted-query-manifest")`},
		{"format not a name", `{"format":"` + secretBody + `"}`, `persisted: manifest: unknown format (want "apollo-persisted-query-manifest"; a plain map cannot use the id "format")`},
		{"version 2", `{"format":"apollo-persisted-query-manifest","version":2,"operations":[]}`, "persisted: manifest: unsupported version 2 (want 1)"},
		{"version as a string", `{"format":"apollo-persisted-query-manifest","version":"1","operations":[]}`, `persisted: manifest: unsupported version "1" (want 1)`},
		{"no version", `{"format":"apollo-persisted-query-manifest","operations":[]}`, `persisted: manifest: no "version" member`},
		{"no operations", `{"format":"apollo-persisted-query-manifest","version":1}`, `persisted: manifest: no "operations" member`},
		{"operations not an array", `{"format":"apollo-persisted-query-manifest","version":1,"operations":{}}`, `persisted: manifest: "operations" at byte offset 68 is not an array`},
		{"member twice", `{"format":"apollo-persisted-query-manifest","version":1,"version":1,"operations":[]}`, `persisted: manifest: top-level member "version" given twice`},
		{"operation not an object", apollo(`1`), "persisted: manifest: operations[0] at byte offset 69: json: cannot unmarshal number into Go value of type persisted.apolloOperation"},
		// Apollo operations
		{"no id", apollo(op("", "Me", "query", bodyQuery)), `persisted: manifest: operations[0] (operation "Me", id ""): no id`},
		{"bad type", apollo(op(q, "Me", "fragment", bodyQuery)), `persisted: manifest: operations[0] (operation "Me", id "` + q + `"): type "fragment" is not query, mutation or subscription`},
		{"custom id in Apollo", apollo(op("Me_v1", "Me", "query", bodyQuery)), `persisted: manifest: operations[0] (operation "Me", id "Me_v1"): id is not a SHA-256 hash (custom ids are accepted only in a plain id→body map)`},
		{"empty Apollo body", apollo(op(q, "Me", "query", "")), `persisted: manifest: operations[0] (operation "Me", id "` + q + `"): empty body`},
		{"Apollo hash mismatch", apollo(op(q, "Me", "query", secretBody)), `persisted: manifest: operations[0] (operation "Me", id "` + q + `"): the body's SHA-256 is ` + hexOf(secretBody) + `, not the id`},
		{"Apollo id twice", apollo(op(q, "Me", "query", bodyQuery), op("sha256:"+q, "Me2", "query", secretBody)), `persisted: manifest: operations[1] (operation "Me2", id "sha256:` + q + `"): given twice with different bodies`},
		// plain maps
		{"empty plain body", `{"x": ""}`, `persisted: manifest: id "x": empty body`},
		{"blank plain body", `{"x": " ,\n# only a comment\n\t\ufeff"}`, `persisted: manifest: id "x": empty body`},
		{"custom id twice", `{"x": "{ a }", "x": "` + secretBody + `"}`, `persisted: manifest: id "x": given twice with different bodies`},
		{"hash id twice", `{"` + q + `": "` + bodyQuery + `", "sha256:` + q + `": "` + secretBody + `"}`, `persisted: manifest: id "sha256:` + q + `": given twice with different bodies`},
		{"bad sha256 id", `{"sha256:zz": "{ a }"}`, `persisted: manifest: id "sha256:zz": the sha256: prefix is not followed by 64 hexadecimal characters`},
		{"plain hash mismatch", `{"` + q + `": "` + secretBody + `"}`, `persisted: manifest: id "` + q + `": the body's SHA-256 is ` + hexOf(secretBody) + `, not the id`},
		{"empty id", `{"": "{ a }"}`, "persisted: manifest: an empty id"},
		{"long id clipped", `{"` + strings.Repeat("k", 200) + `": ""}`, `persisted: manifest: id "` + strings.Repeat("k", 80) + `…": empty body`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := persisted.ParseManifest([]byte(tc.content))
			if err == nil {
				t.Fatalf("accepted (%d ids)", m.Len())
			}
			if err.Error() != tc.want+suffix {
				t.Fatalf("error:\n%s\nwant:\n%s", err, tc.want+suffix)
			}
			if !errors.Is(err, persisted.ErrInvalidManifest) {
				t.Fatal("error does not wrap ErrInvalidManifest")
			}
			if strings.Contains(err.Error(), "secretField") {
				t.Fatal("error repeats a document's body")
			}
			// The same through a file: the message names the file.
			path := writeManifest(t, tc.content)
			_, err = persisted.LoadManifest(path)
			if want := tc.want + suffix + " (file " + path + ")"; err == nil || err.Error() != want {
				t.Fatalf("LoadManifest error:\n%v\nwant:\n%s", err, want)
			}
		})
	}
}

func TestManifestRefusesAnOversizedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(persisted.MaxManifestBytes + 1); err != nil { // sparse: no 64 MiB written
		t.Fatal(err)
	}
	_ = f.Close()
	_, err = persisted.LoadManifest(path)
	want := "persisted: manifest: file " + path + ": 67108865 bytes over the 67108864-byte bound" + suffix
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n%v\nwant:\n%s", err, want)
	}
	_, err = persisted.ParseManifest(make([]byte, persisted.MaxManifestBytes+1))
	if want := "persisted: manifest: 67108865 bytes over the 67108864-byte bound" + suffix; err == nil || err.Error() != want {
		t.Fatalf("ParseManifest error:\n%v\nwant:\n%s", err, want)
	}
}

func TestManifestMissingFile(t *testing.T) {
	_, err := persisted.LoadManifest(filepath.Join(t.TempDir(), "absent.json"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("error %v, want fs.ErrNotExist", err)
	}
}
