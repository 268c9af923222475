package gqlguard

// graphql_guard in front of another backend: Automatic Persisted Queries (memory
// and Redis) and trusted documents, as Caddy runs them.

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

func apqRoute(path, schema, extra string) string {
	return fmt.Sprintf(`
	route %s {
		graphql_guard {
			schema %s
			persisted_queries {%s
			}
		}
		%s
	}`, path, schema, extra, libraryEcho)
}

func TestAnyBackendAPQMemory(t *testing.T) {
	schema := testdataPath(t, "library.graphqls")
	s := startCaddy(t, apqRoute("/apq", schema, "\n\t\t\t\tmax_entries 100"))
	hash := librarySHA256(booksQuery)
	hashOnly := `{"variables":{"first":2},` + apqExt(hash, 1) + `}`

	resp, body := s.do(t, call{path: "/apq", body: hashOnly})
	expect(t, "unknown hash", resp, body, 200, bodyPQNotFound)

	register := q(booksQuery, `"variables":{"first":2}`, apqExt(hash, 1))
	resp, body = s.do(t, call{path: "/apq", body: register})
	expect(t, "registration", resp, body, 200, echoed("query", "books", "", "", register))

	resp, body = s.do(t, call{path: "/apq", body: hashOnly})
	expect(t, "hit by hash", resp, body, 200,
		echoed("query", "books", "", "", `{"query":`+jsonString(booksQuery)+`,"variables":{"first":2},`+apqExt(hash, 1)+`}`))

	// the document sent by hash is still checked: its variables are coerced
	resp, body = s.do(t, call{path: "/apq", body: `{"variables":{"first":"two"},` + apqExt(hash, 1) + `}`})
	expect(t, "hit by hash, bad variable", resp, body, 400,
		`{"errors":[{"message":"Variable \"$first\" is invalid at variable.first: cannot use string as Int"}]}`)

	resp, body = s.do(t, call{path: "/apq", body: q(booksQuery, apqExt(librarySHA256(booksQuery+" "), 1))})
	expect(t, "mismatched hash", resp, body, 400, bodyPQMismatch)
	resp, body = s.do(t, call{path: "/apq", body: q(booksQuery, apqExt(hash[:60], 1))})
	expect(t, "short hash", resp, body, 400, bodyPQMismatch)
	resp, body = s.do(t, call{path: "/apq", body: `{` + apqExt(hash, 2) + `}`})
	expect(t, "version 2", resp, body, 400, bodyPQVersion)

	// an invalid document registers nothing
	bad := `{ books { nodez } }`
	resp, body = s.do(t, call{path: "/apq", body: q(bad, apqExt(librarySHA256(bad), 1))})
	if resp.StatusCode != 200 || !strings.Contains(body, `"code":"GRAPHQL_VALIDATION_FAILED"`) {
		t.Fatalf("invalid registration: %d %s", resp.StatusCode, body)
	}
	resp, body = s.do(t, call{path: "/apq", body: `{` + apqExt(librarySHA256(bad), 1) + `}`})
	expect(t, "hash of an invalid document", resp, body, 200, bodyPQNotFound)

	// a flood of distinct registrations is bounded by max_entries
	early := `{ book(id: "early") { id } }`
	resp, body = s.do(t, call{path: "/apq", body: q(early, apqExt(librarySHA256(early), 1))})
	expect(t, "early registration", resp, body, 200, echoed("query", "book", "", "", q(early, apqExt(librarySHA256(early), 1))))
	resp, body = s.do(t, call{path: "/apq", body: `{` + apqExt(librarySHA256(early), 1) + `}`})
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "type=query roots=book ") {
		t.Fatalf("early hash before the flood: %d %s", resp.StatusCode, body)
	}
	const flood = 20_000
	flooded := floodAPQ(t, s, "/apq", flood)
	if flooded != flood {
		t.Fatalf("%d of %d flood registrations admitted", flooded, flood)
	}
	// The flood's eight connections may linger half-closed in the client's
	// pool (beyond MaxIdleConnsPerHost); the checks below use a fresh one.
	s.tester.Client.CloseIdleConnections()
	resp, body = s.do(t, call{path: "/apq", body: `{` + apqExt(librarySHA256(early), 1) + `}`})
	expect(t, "early hash after the flood", resp, body, 200, bodyPQNotFound)
	last := floodDoc(flood - 1)
	resp, body = s.do(t, call{path: "/apq", body: `{` + apqExt(librarySHA256(last), 1) + `}`})
	expect(t, "last flood hash", resp, body, 200, echoed("query", "book", "", "", `{"query":`+jsonString(last)+`,`+apqExt(librarySHA256(last), 1)+`}`))
}

func floodDoc(i int) string { return `{ book(id: "f` + strconv.Itoa(i) + `") { id } }` }

// floodAPQ registers n distinct documents (in order of i, 8 at a time) and
// returns how many were admitted.
func floodAPQ(t *testing.T, s *server, path string, n int) int {
	t.Helper()
	var admitted atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				doc := floodDoc(i)
				req, err := http.NewRequest(http.MethodPost, s.base+path, strings.NewReader(q(doc, apqExt(librarySHA256(doc), 1))))
				if err != nil {
					errs <- err
					return
				}
				req.Header.Set("Content-Type", "application/json")
				resp, err := s.tester.Client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				b := new(strings.Builder)
				_, _ = bufio.NewReader(resp.Body).WriteTo(b)
				resp.Body.Close()
				if resp.StatusCode == 200 && strings.HasPrefix(b.String(), "type=query ") {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// the last document is registered after every other one
	doc := floodDoc(n - 1)
	resp, body := s.do(t, call{path: path, body: q(doc, apqExt(librarySHA256(doc), 1))})
	if resp.StatusCode != 200 {
		t.Fatalf("last flood registration: %d %s", resp.StatusCode, body)
	}
	return int(admitted.Load())
}

// TestAnyBackendAPQRedis: two guards (two routes, each with its own memory
// front) sharing one Redis URL and key_prefix: a document registered
// through one is served by the other; one whose schema lacks a field
// refuses the document registered through the other with the validation
// error.
func TestAnyBackendAPQRedis(t *testing.T) {
	client, prefix := testenv.Redis(t)
	schema := testdataPath(t, "library.graphqls")
	src, err := os.ReadFile(schema)
	if err != nil {
		t.Fatal(err)
	}
	// the same library without Query.loans (an instance on an older schema)
	older := strings.Replace(string(src), "  loans(memberId: ID!, first: Int = 20): [Loan!]!\n", "", 1)
	if older == string(src) {
		t.Fatal("testdata/library.graphqls has no Query.loans line to remove")
	}
	olderPath := filepath.Join(t.TempDir(), "older.graphqls")
	if err := os.WriteFile(olderPath, []byte(older), 0o600); err != nil {
		t.Fatal(err)
	}
	store := fmt.Sprintf("\n\t\t\t\tredis redis://%s/0\n\t\t\t\tkey_prefix %s\n\t\t\t\tttl 1h", testenv.RedisAddr(), prefix)
	s := startCaddy(t, apqRoute("/a", schema, store)+apqRoute("/b", schema, store)+apqRoute("/older", olderPath, store)+
		apqRoute("/other", schema, fmt.Sprintf("\n\t\t\t\tredis redis://%s/0\n\t\t\t\tkey_prefix %sother:", testenv.RedisAddr(), prefix)))

	hash := librarySHA256(booksQuery)
	hashOnly := `{"variables":{"first":1},` + apqExt(hash, 1) + `}`
	resp, body := s.do(t, call{path: "/b", body: hashOnly})
	expect(t, "unknown on b", resp, body, 200, bodyPQNotFound)
	register := q(booksQuery, apqExt(hash, 1))
	resp, body = s.do(t, call{path: "/a", body: register})
	expect(t, "registered through a", resp, body, 200, echoed("query", "books", "", "", register))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stored, err := client.Get(ctx, prefix+"apq:"+hash).Result()
	if err != nil || stored != booksQuery {
		t.Fatalf("Redis %sapq:%s = %q, %v; want the document", prefix, hash, stored, err)
	}
	if ttl := client.TTL(ctx, prefix+"apq:"+hash).Val(); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("TTL %s, want within 1h", ttl)
	}

	resp, body = s.do(t, call{path: "/b", body: hashOnly})
	expect(t, "served by b", resp, body, 200,
		echoed("query", "books", "", "", `{"query":`+jsonString(booksQuery)+`,"variables":{"first":1},`+apqExt(hash, 1)+`}`))
	resp, body = s.do(t, call{path: "/other", body: hashOnly})
	expect(t, "another key_prefix", resp, body, 200, bodyPQNotFound)

	loansQuery := `{ loans(memberId: "m1") { id } }`
	lh := librarySHA256(loansQuery)
	resp, body = s.do(t, call{path: "/a", body: q(loansQuery, apqExt(lh, 1))})
	expect(t, "loans registered through a", resp, body, 200, echoed("query", "loans", "", "", q(loansQuery, apqExt(lh, 1))))
	resp, body = s.do(t, call{path: "/older", body: `{` + apqExt(lh, 1) + `}`})
	expect(t, "loans by hash on the older schema", resp, body, 200,
		`{"data":null,"errors":[{"message":"Cannot query field \"loans\" on type \"Query\". Did you mean \"books\"?","locations":[{"line":1,"column":3}],"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`)

	// a value planted in Redis under the hash of another text is not served
	planted := `{ book(id: "planted") { id } }`
	ph := librarySHA256(`{ book(id: "other") { id } }`)
	if err := client.Set(ctx, prefix+"apq:"+ph, planted, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	resp, body = s.do(t, call{path: "/b", body: `{` + apqExt(ph, 1) + `}`})
	if resp.StatusCode == 200 && strings.HasPrefix(body, "type=") {
		t.Fatalf("a Redis value that does not hash to its key was served: %s", body)
	}
}

func TestAnyBackendTrustedDocuments(t *testing.T) {
	schema := testdataPath(t, "library.graphqls")
	manifest := testdataPath(t, "manifest.json")
	s := startCaddy(t, fmt.Sprintf(`
	route /trusted {
		graphql_guard {
			schema %[1]s
			trusted_documents %[2]s
			trusted_only
		}
		%[3]s
	}
	route /tiers {
		test_caller
		graphql_guard {
			schema %[1]s
			trusted_documents %[2]s
			trusted_only free
		}
		%[3]s
	}`, schema, manifest, libraryEcho))
	hash := librarySHA256(shelfQuery)
	adHoc := `{ book(id: "b1") { title } }`

	resp, body := s.do(t, call{path: "/trusted", body: q(shelfQuery)})
	expect(t, "trusted text", resp, body, 200, echoed("query", "books", "", "", q(shelfQuery)))
	resp, body = s.do(t, call{path: "/trusted", body: q(adHoc)})
	expect(t, "ad-hoc", resp, body, 200, bodyUntrusted)
	resp, body = s.do(t, call{path: "/trusted", body: q(shelfQuery + " ")})
	expect(t, "trusted text with a trailing space", resp, body, 200, bodyUntrusted)
	resp, body = s.do(t, call{path: "/trusted", body: `{"documentId":"sha256:` + hash + `"}`})
	// documentId is replaced by the text: an upstream that knows documentId would refuse both.
	expect(t, "documentId", resp, body, 200, echoed("query", "books", "", "", `{"query":`+jsonString(shelfQuery)+`}`))
	resp, body = s.do(t, call{path: "/trusted", body: `{"documentId":"sha256:` + librarySHA256(adHoc) + `"}`})
	expect(t, "unknown documentId", resp, body, 200, bodyPQNotFound)
	resp, body = s.do(t, call{path: "/trusted", body: `{` + apqExt(hash, 1) + `}`})
	expect(t, "APQ hash of the trusted document", resp, body, 200, echoed("query", "books", "", "", `{"query":`+jsonString(shelfQuery)+`,`+apqExt(hash, 1)+`}`))
	resp, body = s.do(t, call{path: "/trusted", headers: map[string]string{"Accept": "application/graphql-response+json"}, body: q(adHoc)})
	expect(t, "ad-hoc, graphql-response+json", resp, body, 400, `{"errors":[{"message":"Only trusted documents are allowed","extensions":{"code":"TRUSTED_DOCUMENT_REQUIRED"}}]}`)

	for _, tc := range []struct {
		name, tier, body string
		want             string
	}{
		{"free, ad-hoc", "free", q(adHoc), bodyUntrusted},
		{"free, trusted", "free", q(shelfQuery), echoed("query", "books", "", "", q(shelfQuery))},
		{"free, documentId", "free", `{"documentId":"sha256:` + hash + `"}`, echoed("query", "books", "", "", `{"query":`+jsonString(shelfQuery)+`}`)},
		{"paid, ad-hoc", "paid", q(adHoc), echoed("query", "book", "", "", q(adHoc))},
		{"no tier, ad-hoc", "", q(adHoc), echoed("query", "book", "", "", q(adHoc))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.tier != "" {
				h["X-Test-Tier"] = tc.tier
			}
			resp, body := s.do(t, call{path: "/tiers", headers: h, body: tc.body})
			expect(t, tc.name, resp, body, 200, tc.want)
		})
	}
}
