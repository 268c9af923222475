package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// Hostile key names, labels and expiries against the real civicgate binary
// and PostgreSQL (docs/design.md D71; README.md "Hostile requests"): markup,
// control characters, a bidi override, oversize names and labels, an
// expiry in the past, in the year 10000, without an offset or with an
// impossible one. What `keys issue` accepts is stored as given and printed
// escaped where it is markup (list --json) or never printed (the gateway's
// logs); what it refuses exits 2 with a message that quotes none of it. An
// expired key is refused with the exact body; nothing of any of it reaches a
// log.

const keyLabelsCaddyfile = `{
	admin {$CIVICGATE_ADMIN}
	http_port {$CIVICGATE_HTTP_PORT}
	https_port {$CIVICGATE_HTTPS_PORT}
	skip_install_trust
	civic_auth {
		keys postgres {env.DATABASE_URL}
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

// controlByte finds a control character other than a line end.
var controlByte = regexp.MustCompile(`[\x00-\x09\x0b-\x1f\x7f]|\x{202e}|\x{2028}`)

func TestKeyLabelsHostile(t *testing.T) {
	s := stack.New(t, &bins)
	s.Run(s.Bins.Civicgate, "keys", "migrate")
	dir := t.TempDir()
	caddyfile := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(caddyfile, []byte(keyLabelsCaddyfile), 0o600); err != nil {
		t.Fatal(err)
	}
	keyRE := regexp.MustCompile(`cg_live_[0-9A-Za-z]{43}`)
	idRE := regexp.MustCompile(`key_[0-9A-Za-z]+`)
	issue := []string{"keys", "issue", "--org", "acme", "--tier", "free", "--env", "live"}
	run := func(args ...string) (string, int) {
		out, err := s.RunErr(s.Bins.Civicgate, args...)
		var exit *exec.ExitError
		switch {
		case err == nil:
			return out, 0
		case errors.As(err, &exit):
			return out, exit.ExitCode()
		}
		t.Fatalf("%v: %v", args, err)
		return "", 0
	}

	t.Run("refused values exit 2 and quote nothing", func(t *testing.T) {
		for _, c := range []struct {
			name  string
			args  []string
			value string // what must not be quoted back
		}{
			{"escape sequence in the name", []string{"--name", "\x1b]0;pwned\x07\x1b[2J"}, "pwned"},
			{"newline in the name (log forging)", []string{"--name", "ok\n{\"level\":\"error\",\"msg\":\"forged\"}"}, "forged"},
			{"bidi override in the name", []string{"--name", "invoice\u202egpj.exe"}, "gpj.exe"},
			{"DEL in a label", []string{"--label", "k=a\x7fsecretish"}, "secretish"},
			{"C1 control in a label", []string{"--label", "k=a\u009bsecretish"}, "secretish"},
			{"carriage return in a label", []string{"--label", "k=ok\rFAKE"}, "FAKE"},
			{"oversize name", []string{"--name", strings.Repeat("long", 26)}, strings.Repeat("long", 26)},
			{"oversize label value", []string{"--label", "k=" + strings.Repeat("x", 201)}, strings.Repeat("x", 201)},
			{"markup label key", []string{"--label", "<script>=x"}, "<script>"},
			{"a key in a label", []string{"--label", "k=cg_live_" + strings.Repeat("Z", 43)}, strings.Repeat("Z", 43)},
			{"seventeen labels", func() []string {
				var a []string
				for i := range 17 {
					a = append(a, "--label", fmt.Sprintf("l%d=v", i))
				}
				return a
			}(), "l16=v"},
			{"expiry in the past", []string{"--expires", "2001-09-09T01:46:40Z"}, ""},
			{"expiry of year 10000", []string{"--expires", "10000-01-01T00:00:00Z"}, ""},
			{"expiry 200 years ahead", []string{"--expires", "73000d"}, ""},
			{"expiry without an offset", []string{"--expires", "2030-01-01T00:00:00"}, ""},
			{"expiry with an impossible offset", []string{"--expires", "2030-01-01T00:00:00+24:00"}, ""},
			{"expiry as a negative duration", []string{"--expires", "-1h"}, ""},
		} {
			out, code := run(append(append([]string{}, issue...), c.args...)...)
			if code != 2 || !strings.Contains(out, "bad usage") || keyRE.MatchString(out) {
				t.Errorf("%s: exit %d, output %q; want exit 2, no key", c.name, code, out)
			}
			if c.value != "" && strings.Contains(out, c.value) {
				t.Errorf("%s: the message quotes the value: %q", c.name, out)
			}
			if controlByte.MatchString(out) {
				t.Errorf("%s: the message holds a control character: %q", c.name, out)
			}
		}
		if out := s.Run(s.Bins.Civicgate, "keys", "list", "--json"); strings.Contains(out, "key_") {
			t.Fatalf("refused issues made keys:\n%s", out)
		}
	})

	// Accepted: markup and quotes (printable), a timezone far from UTC.
	const markupName = `<img src=x onerror=alert(1)> "quoted" & 'single'`
	const markupLabel = `</script><script>alert(2)</script>`
	out := s.Run(s.Bins.Civicgate, append(append([]string{}, issue...), "--name", markupName, "--label", "src="+markupLabel,
		"--label", "tz=+14:00", "--expires", "2030-01-01T00:30:00+14:00")...)
	markupKey, markupID := keyRE.FindString(out), idRE.FindString(out)
	if markupKey == "" || !strings.Contains(out, "Expires: 2029-12-31T10:30:00Z") {
		t.Fatalf("issue with markup and a +14:00 expiry: %q (want the expiry in UTC)", keyRE.ReplaceAllString(out, "cg_…"))
	}
	var list struct {
		Keys []struct {
			ID        string            `json:"id"`
			Name      string            `json:"name"`
			Labels    map[string]string `json:"labels"`
			ExpiresAt *time.Time        `json:"expires_at"`
		} `json:"keys"`
	}
	raw := s.Run(s.Bins.Civicgate, "keys", "list", "--json")
	if strings.ContainsAny(raw, "<>") {
		t.Errorf("list --json prints markup unescaped:\n%s", raw)
	}
	if err := json.Unmarshal([]byte(raw), &list); err != nil || len(list.Keys) != 1 {
		t.Fatalf("list --json: %v\n%s", err, raw)
	}
	if k := list.Keys[0]; k.ID != markupID || k.Name != markupName || k.Labels["src"] != markupLabel || k.ExpiresAt == nil ||
		!k.ExpiresAt.Equal(time.Date(2029, 12, 31, 10, 30, 0, 0, time.UTC)) {
		t.Fatalf("listed %+v", k)
	}
	if table := s.Run(s.Bins.Civicgate, "keys", "list"); controlByte.MatchString(table) {
		t.Errorf("the table holds a control character:\n%q", table)
	}

	// An expired key through the real gateway: issued for an hour, then
	// moved into the past in the database (created and expired before now,
	// as it is a day later).
	out = s.Run(s.Bins.Civicgate, "keys", "issue", "--org", "beta", "--tier", "free", "--env", "live", "--expires", "1h",
		"--name", "soon gone", "--label", "note="+markupLabel)
	expiredKey, expiredID := keyRE.FindString(out), idRE.FindString(out)
	pool, err := pgxpool.New(context.Background(), s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(context.Background(), `UPDATE civicgate.api_keys SET created_at = now() - interval '1 day',
		expires_at = now() - interval '1 minute' WHERE id = $1`, expiredID); err != nil {
		t.Fatal(err)
	}
	gw := s.StartGateway(caddyfile)
	ask := func(key string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, s.HTTPSURL+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := s.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, string(b)
	}
	if code, body := ask(markupKey); code != 200 || body != markupID {
		t.Fatalf("the key with markup labels: %d %q", code, body)
	}
	for range 3 {
		if code, body := ask(expiredKey); code != 401 || body != `{"error":"API key expired"}` {
			t.Fatalf("the expired key: %d %q", code, body)
		}
	}
	list.Keys = nil
	if err := json.Unmarshal([]byte(s.Run(s.Bins.Civicgate, "keys", "list", "--json", "--org", "beta")), &list); err != nil {
		t.Fatal(err)
	}
	if out := s.Run(s.Bins.Civicgate, "keys", "list", "--org", "beta"); !strings.Contains(out, "expired") {
		t.Errorf("the expired key is not listed as expired:\n%s", out)
	}
	// The refusal is logged by key id and reason; no name, label, key or
	// hash reaches the gateway's log, and nothing in it is a control byte.
	stack.WaitFor(t, 10*time.Second, "the expired key's refusal logged", func() error {
		b, err := os.ReadFile(gw.Log)
		if err != nil {
			return err
		}
		if !bytes.Contains(b, []byte(`"reason":"expired"`)) || !bytes.Contains(b, []byte(expiredID)) {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	b, err := os.ReadFile(gw.Log)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{markupName, markupLabel, "soon gone", "onerror", "alert("} {
		if bytes.Contains(b, []byte(leak)) {
			t.Errorf("the gateway's log holds %q", leak)
		}
	}
	if m := controlByte.Find(b); m != nil {
		t.Errorf("the gateway's log holds a control byte %q", m)
	}
	s.CheckLogs(t, markupKey, expiredKey)
}
