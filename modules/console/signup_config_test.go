package console

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestSignupDevMailFolder: with civic_mail's folder on a loopback site, a sign-up's
// mail becomes a private file holding the link, and no SMTP server is used.
func TestSignupDevMailFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mail")
	g := startSignupGatewayMail(t, SignupOpen, "folder "+dir)
	if r := g.signup(t, signupFields("dev@example.org", "Dev")); r.code != 200 {
		t.Fatalf("sign-up: %d", r.code)
	}
	testenv.Eventually(t, 30*time.Second, "a mail file", func() error {
		files, _ := filepath.Glob(filepath.Join(dir, "*dev_example.org.eml"))
		if len(files) != 1 {
			return fmt.Errorf("%d files", len(files))
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			return err
		}
		if st, _ := os.Stat(files[0]); st.Mode().Perm() != 0o600 {
			t.Errorf("mode %v", st.Mode().Perm())
		}
		if !strings.Contains(string(b), "/signup/verify?token=") { // quoted-printable writes = as =3D
			return fmt.Errorf("no link in %s", b)
		}
		return nil
	})
}

// TestSignupConfigRefused: a signup block, or the civic_mail option it
// sends through, that cannot work is refused when the configuration loads,
// naming the option; closed needs nothing.
func TestSignupConfigRefused(t *testing.T) {
	t.Setenv("CIVIC_SIGNUP_TEST_SMTP", "smtp://user:s3cret@mail.example.org:587?tls=none")
	const ok = "tier free\nterms_url https://example.org/terms\napi_url https://api.example.org/v1/graphql\n" +
		"site_url https://console.example.org\n"
	const mail = "database postgres://127.0.0.1:1/x\nfrom noreply@example.org\n"
	for name, c := range map[string]struct{ block, mail, want string }{
		"closed needs nothing":    {"mode closed", "", ""},
		"unknown mode":            {"mode sometimes", "", `mode "sometimes"`},
		"unknown tier":            {"mode open\n" + strings.Replace(ok, "tier free", "tier gold", 1), mail + "smtp smtp://mail.example.org", `tier "gold"`},
		"no civic_mail":           {"mode open\n" + ok, "", "civic_mail global option"},
		"no mail":                 {"mode open\n" + ok, mail, "configure its smtp"},
		"folder on a public site": {"mode open\n" + ok, mail + "folder /tmp/x", "folder is for a development site"},
		"folder, public console": {"mode open\n" + ok, mail + "folder /tmp/x\nsite_url http://localhost:1",
			"civic_mail's folder is for a development site"},
		"both":                    {"mode open\n" + ok, mail + "smtp smtp://mail.example.org\nfolder /tmp/x", "exclusive"},
		"plain SMTP to the world": {"mode open\n" + ok, mail + "smtp {env.CIVIC_SIGNUP_TEST_SMTP}", "tls=none is only allowed to a loopback host"},
		"http site_url":           {"mode open\n" + strings.Replace(ok, "https://console", "http://console", 1), mail + "smtp smtp://mail.example.org", "site_url"},
		"terms not a URL":         {"mode open\n" + strings.Replace(ok, "https://example.org/terms", "terms.html", 1), mail + "smtp smtp://mail.example.org", "terms_url"},
		"from with a newline": {"mode open\n" + ok, strings.Replace(mail, "noreply@example.org", `"a@b.org\r\nBcc: c@d.org"`, 1) +
			"smtp smtp://mail.example.org", "from must be an address"},
		"bad limit": {"mode open\n" + ok + "limit_ip lots", mail + "smtp smtp://mail.example.org", "signup-ip"},
	} {
		t.Run(name, func(t *testing.T) {
			global := "admin off\n"
			if c.mail != "" {
				global += "civic_mail {\n" + c.mail + "\n}\n"
			}
			src := "{\n" + global + "}\nhttp://localhost:0 {\ncivic_console {\ndatabase postgres://127.0.0.1:1/x\ntier free 30/m bills\nsignup {\n" + c.block + "\n}\n}\n}"
			cfgJSON, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(src), nil)
			if err != nil {
				t.Fatalf("adapt: %v", err)
			}
			var cfg caddy.Config
			if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
				t.Fatal(err)
			}
			err = caddy.Validate(&cfg)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want %q", err, c.want)
			case err != nil && strings.Contains(err.Error(), "s3cret"):
				t.Fatalf("the error repeats the password: %v", err)
			}
		})
	}
}

// TestLimitAddr: the per-IP limit counts an IPv4 address alone, an IPv6
// address by its /64, and a mapped IPv4 address as IPv4.
func TestLimitAddr(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7":             "192.0.2.7",
		"192.0.2.7:5555":        "192.0.2.7",
		"::ffff:192.0.2.7":      "192.0.2.7",
		"2001:db8:1:2:3:4:5:6":  "2001:db8:1:2::/64",
		"[2001:db8:1:2::9]:443": "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1":  "2001:db8:1:2::/64",
		"2001:db8:1:3::1":       "2001:db8:1:3::/64",
		"not an address at all": "not an address at all",
	} {
		if got := limitAddr(in); got != want {
			t.Errorf("limitAddr(%q) = %q, want %q", in, got, want)
		}
	}
}
