package reliability

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// Hostile keys files against the real civicgate binary (docs/design.md D8;
// README.md "Hostile requests"): what `civicgate validate` and a running
// gateway do with malformed JSON,
// duplicate ids and hashes, wrong hash lengths, unknown members, a file far
// over the size bound, a missing file, and a file rewritten in place while
// the gateway reads it. No error names a hash; a running gateway keeps its
// last good keys and logs each bad episode once.

const keysFileCaddyfile = `{
	admin {$CIVICGATE_ADMIN}
	http_port {$CIVICGATE_HTTP_PORT}
	https_port {$CIVICGATE_HTTPS_PORT}
	skip_install_trust
	civic_auth {
		keys file {env.CIVICGATE_KEYS_FILE}
		environment live
		identity_secret {env.CIVIC_IDENTITY_SECRET}
		cache_ttl 50ms
		negative_cache_ttl 50ms
		tier free 30/m bills
	}
}
https://localhost:{$CIVICGATE_HTTPS_PORT} {
	tls internal
	civic_auth
	respond "{civic.key_id}"
}
`

const keysFileProblem = "keys file unreadable or invalid; keeping the keys last read from it"

var hexHash = regexp.MustCompile(`[0-9a-f]{64}`)

func randomHash(t *testing.T) string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

func fileKey(id, org, hash string) keystore.FileKey {
	return keystore.FileKey{ID: id, OrgID: "org_" + org, OrgName: org, OrgStatus: "active", Env: "live", Tier: "free",
		Status: "active", SHA256: hash, Prefix: "cg_live_0000", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func encodeKeys(t *testing.T, keys ...keystore.FileKey) []byte {
	t.Helper()
	b, err := json.Marshal(keystore.File{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replaceFile writes data to path atomically (temporary file, rename).
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path+".next", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".next", path); err != nil {
		t.Fatal(err)
	}
}

func TestKeysFileHostile(t *testing.T) {
	s := stack.New(t, &bins)
	dir := t.TempDir()
	caddyfile := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(caddyfile, []byte(keysFileCaddyfile), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "keys.json")
	out := s.Run(s.Bins.Civicgate, "keys", "issue", "--file", path, "--org", "acme", "--tier", "free", "--env", "live")
	keyA := regexp.MustCompile(`cg_live_[0-9A-Za-z]{43}`).FindString(out)
	idA := regexp.MustCompile(`key_[0-9A-Za-z]+`).FindString(out)
	good, err := os.ReadFile(path)
	if err != nil || keyA == "" {
		t.Fatalf("issue: %q %v", out, err)
	}
	var goodFile keystore.File
	if err := json.Unmarshal(good, &goodFile); err != nil {
		t.Fatal(err)
	}
	a := goodFile.Keys[0]
	hashA := a.SHA256
	h1, h2 := randomHash(t), randomHash(t)

	huge := filepath.Join(dir, "huge.json") // sparse: 64 MiB + 1 of NUL bytes
	if f, err := os.Create(huge); err != nil {
		t.Fatal(err)
	} else if err := f.Truncate(keystore.MaxFileSize + 1); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	dupID := fileKey("key_dup", "beta", h1)
	dupHash := fileKey("key_other", "beta", hashA)
	hostile := []struct {
		name    string
		content []byte // nil: the file named by file
		file    string
		want    string
	}{
		{"malformed JSON", []byte(`{"keys":[{"id":"key_1",,}]}`), "", "malformed JSON at byte"},
		{"truncated JSON", good[:len(good)/2], "", "truncated JSON"},
		{"empty file", []byte{}, "", "keys file is empty"},
		{"not an object", []byte(`[]`), "", "has the wrong type"},
		{"trailing data", append(append([]byte{}, good...), []byte(`{"keys":[]}`)...), "", "data after the JSON object"},
		{"unknown member", []byte(`{"keys":[],"` + hashA + `":1}`), "", "unknown member or invalid value"},
		{"duplicate ids", encodeKeys(t, dupID, fileKey("key_dup", "beta", h2)), "", "key id key_dup appears twice"},
		{"duplicate hashes", encodeKeys(t, a, dupHash), "", "keys " + idA + " and key_other have the same sha256"},
		{"short hash", encodeKeys(t, fileKey("key_short", "beta", h1[:63])), "", "key key_short: sha256 is not 64 hexadecimal characters"},
		{"long hash", encodeKeys(t, fileKey("key_long", "beta", h1+"00")), "", "key key_long: sha256 is not 64 hexadecimal characters"},
		{"non-hex hash", encodeKeys(t, fileKey("key_nonhex", "beta", "zz"+h1[2:])), "", "key key_nonhex: sha256 is not 64 hexadecimal characters"},
		{"rotating without deadline", bytes.Replace(encodeKeys(t, fileKey("key_r", "beta", h1)), []byte(`"status":"active"`), []byte(`"status":"rotating"`), 1), "", "rotating without rotates_out_at"},
		{"huge file", nil, huge, "over 64 MiB"},
		{"missing file", nil, filepath.Join(dir, "absent.json"), "does not exist (create it with `civicgate keys issue --file"},
		{"directory", nil, dir, "is not a regular file"},
	}
	validate := func(p string) (string, error) {
		s.Setenv("CIVICGATE_KEYS_FILE", p)
		return s.RunErr(s.Bins.Civicgate, "validate", "--config", caddyfile, "--adapter", "caddyfile")
	}

	t.Run("validate refuses each with a clear error and no hash", func(t *testing.T) {
		for _, c := range hostile {
			p := c.file
			if c.content != nil {
				p = filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".json")
				if err := os.WriteFile(p, c.content, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			out, err := validate(p)
			if err == nil || !strings.Contains(out, c.want) {
				t.Errorf("%s: validate %v, output %q; want a failure saying %q", c.name, err, out, c.want)
			}
			if h := hexHash.FindString(out); h != "" {
				t.Errorf("%s: the error quotes a hash: %q", c.name, out)
			}
		}
		if out, err := validate(path); err != nil {
			t.Fatalf("control: validate of the good file: %v\n%s", err, out)
		}
		// A large valid file (50 000 keys, ~15 MB) is accepted.
		many := make([]keystore.FileKey, 50_000)
		for i := range many {
			many[i] = fileKey(fmt.Sprintf("key_%d", i), fmt.Sprintf("org%d", i/2), randomHash(t))
		}
		big := filepath.Join(dir, "big.json")
		if err := os.WriteFile(big, encodeKeys(t, many...), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := validate(big); err != nil {
			t.Fatalf("validate of 50 000 keys: %v\n%s", err, out)
		}
	})

	s.Setenv("CIVICGATE_KEYS_FILE", path)
	gw := s.StartGateway(caddyfile)
	ask := func(key string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, s.HTTPSURL+"/", nil)
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := s.Client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return res.StatusCode, string(b), err
	}
	serves := func(key, id string) func() error {
		return func() error {
			if code, body, err := ask(key); err != nil || code != 200 || body != id {
				return fmt.Errorf("%d %q %v", code, body, err)
			}
			return nil
		}
	}
	// A key the gateway does not know yet is a failed lookup, which civic_auth
	// throttles per client (429 once too many): a new key is asked for only
	// once the gateway has logged a reload of the file, never polled before.
	reloads := func() [][]byte {
		b, err := os.ReadFile(gw.Log)
		if err != nil {
			t.Fatal(err)
		}
		var lines [][]byte
		for _, l := range bytes.Split(b, []byte("\n")) {
			if bytes.Contains(l, []byte(`"msg":"keys file reloaded"`)) {
				lines = append(lines, l)
			}
		}
		return lines
	}
	reloadsLogged := func() int { return len(reloads()) }
	// servedAfterReload asks for key once the gateway has logged, after the
	// reloadsBefore-th reload, a reload of a file of keys keys (the version
	// that holds it).
	servedAfterReload := func(what string, reloadsBefore, keys int, key, id string) {
		t.Helper()
		// Ceilings bound a failure, not the speed: a loaded 2-core machine can delay the file poll by seconds.
		want := []byte(fmt.Sprintf(`"keys":%d,`, keys))
		stack.WaitFor(t, 60*time.Second, what+": its file's reload logged", func() error {
			for _, l := range reloads()[reloadsBefore:] {
				if bytes.Contains(l, want) {
					return nil
				}
			}
			return fmt.Errorf("no reload of %d keys logged after the %d before", keys, reloadsBefore)
		})
		if err := serves(key, id)(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	problemsLogged := func() int {
		b, err := os.ReadFile(gw.Log)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Count(b, []byte(keysFileProblem))
	}
	stack.WaitFor(t, 10*time.Second, "key A served", serves(keyA, idA))

	t.Run("running gateway keeps the last good keys", func(t *testing.T) {
		for i, c := range hostile {
			if c.file == dir {
				continue // a directory cannot be renamed over a file
			}
			switch {
			case c.content != nil:
				replaceFile(t, path, c.content)
			case c.file == huge:
				if err := os.Link(huge, path+".next"); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(path+".next", path); err != nil {
					t.Fatal(err)
				}
			default:
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			}
			stack.WaitFor(t, 60*time.Second, c.name+" logged", func() error {
				if n := problemsLogged(); n != i+1 {
					return fmt.Errorf("%d problems logged, want %d", n, i+1)
				}
				return nil
			})
			if err := serves(keyA, idA)(); err != nil {
				t.Fatalf("%s: key A no longer served: %v", c.name, err)
			}
			// Good again (with a new key, so the recovery is visible).
			keyB, err := keystore.NewKey("live")
			if err != nil {
				t.Fatal(err)
			}
			idB := fmt.Sprint("key_b", i)
			before := reloadsLogged()
			replaceFile(t, path, encodeKeys(t, a, fileKey(idB, "beta", keystore.HashKey(keyB).String())))
			servedAfterReload("recovery after "+c.name, before, 2, keyB, idB)
		}
	})

	t.Run("file rewritten in place while read", func(t *testing.T) {
		keyC, err := keystore.NewKey("live")
		if err != nil {
			t.Fatal(err)
		}
		withC := encodeKeys(t, a, fileKey("key_c", "gamma", keystore.HashKey(keyC).String()))
		var stop atomic.Bool
		var wg sync.WaitGroup
		var bad atomic.Int64
		var badAnswer atomic.Value
		wg.Go(func() { // key A is in every version: it must always be served
			for !stop.Load() {
				if code, body, err := ask(keyA); err != nil || code != 200 || body != idA {
					bad.Add(1)
					badAnswer.Store(fmt.Sprintf("%d %q %v", code, body, err))
				}
			}
		})
		for i := range 200 {
			content := good
			if i%2 == 1 {
				content = withC
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			half := len(content) / 2
			if _, err := f.Write(content[:half]); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond) // a slow writer: the gateway may read half a file
			if _, err := f.Write(content[half:]); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		stop.Store(true)
		wg.Wait()
		if n := bad.Load(); n > 0 {
			t.Fatalf("key A answered otherwise %d times while the file was rewritten, e.g. %v", n, badAnswer.Load())
		}
		before := reloadsLogged()
		replaceFile(t, path, withC)
		servedAfterReload("key C served after the rewrites", before, 2, keyC, "key_c")
	})
	s.CheckLogs(t, keyA, hashA)
}
