package testbrowser_test

import (
	"html"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/civicgate/civicgate/internal/testkit/testbrowser"
)

// strictCSP allows nothing but same-origin styles, images and form posts:
// no script at all.
const strictCSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// site is a small HTTPS site with a self-signed certificate: a form that
// greets whoever submits it, and a page whose inline script CSP blocks.
func site(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", strictCSP)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign up</title><link rel="stylesheet" href="/style.css"></head>
<body><h1>Sign up</h1>
<form id="signup" method="post" action="/greet">
<label for="name">Name</label> <input id="name" name="name">
<label for="town">Town</label> <input id="town" name="town">
<button id="send" type="submit">Send</button>
</form></body></html>`)
	})
	// Browsers ask for a favicon; a 404 would be a console error.
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /style.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css")
		_, _ = io.WriteString(w, "body{font-family:sans-serif;margin:2rem}h1{color:#225}")
	})
	mux.HandleFunc("POST /greet", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3cret", Path: "/", HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode})
		w.Header().Set("Content-Security-Policy", strictCSP)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><html><head><title>Welcome</title></head><body><p id="result">Hello, `+
			html.EscapeString(r.PostFormValue("name"))+` of `+html.EscapeString(r.PostFormValue("town"))+`</p></body></html>`)
	})
	mux.HandleFunc("GET /inline", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "script-src 'self'")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		// The inline script would rename the page; the external one, which
		// 'self' allows, runs after the inline one was parsed and marks the
		// body, so once the mark is there the inline script had its chance.
		_, _ = io.WriteString(w, `<!doctype html><html><head><title>untouched</title></head><body>
<script>document.title = "inline script ran";</script>
<script src="/mark.js"></script></body></html>`)
	})
	mux.HandleFunc("GET /mark.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = io.WriteString(w, `document.body.setAttribute("data-external", "ran"); console.error("external script says hello");`)
	})
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestFormSubmitCookiesAndScreenshot(t *testing.T) {
	srv := site(t)
	ctx := testbrowser.New(t)

	testbrowser.Navigate(t, ctx, srv.URL+"/")
	if got := testbrowser.Title(t, ctx); got != "Sign up" {
		t.Fatalf("title %q", got)
	}
	var size []int
	if err := chromedp.Run(ctx, chromedp.Evaluate(`[window.innerWidth, window.innerHeight]`, &size)); err != nil {
		t.Fatal(err)
	}
	if len(size) != 2 || size[0] != testbrowser.DesktopWidth || size[1] != testbrowser.DesktopHeight {
		t.Errorf("desktop viewport %v, want %dx%d", size, testbrowser.DesktopWidth, testbrowser.DesktopHeight)
	}
	testbrowser.SendKeys(t, ctx, "#name", "Ada")
	testbrowser.SetValue(t, ctx, "#town", "Springfield")
	testbrowser.Submit(t, ctx, "#name")
	if got := testbrowser.Text(t, ctx, "#result"); got != "Hello, Ada of Springfield" {
		t.Fatalf("result %q", got)
	}
	if loc := testbrowser.Location(t, ctx); loc != srv.URL+"/greet" {
		t.Errorf("location %s, want %s/greet", loc, srv.URL)
	}

	var session *network.Cookie
	for _, c := range testbrowser.Cookies(t, ctx) {
		if c.Name == "session" {
			session = c
		}
	}
	if session == nil || session.Value != "s3cret" || !session.HTTPOnly || !session.Secure || session.SameSite != network.CookieSameSiteLax {
		t.Errorf("session cookie %+v", session)
	}

	// Back to the form, this time sent with a click.
	testbrowser.Navigate(t, ctx, srv.URL+"/")
	testbrowser.SendKeys(t, ctx, "#name", "Grace")
	testbrowser.SendKeys(t, ctx, "#town", "Arlington")
	testbrowser.Click(t, ctx, "#send")
	if got := testbrowser.Text(t, ctx, "#result"); got != "Hello, Grace of Arlington" {
		t.Fatalf("result after click %q", got)
	}

	path := testbrowser.Screenshot(t, ctx, "greeting")
	if want := filepath.Join("test-artifacts", "TestFormSubmitCookiesAndScreenshot", "greeting.png"); !strings.HasSuffix(path, want) {
		t.Errorf("screenshot at %s, want …/%s", path, want)
	}
	cfg := decodePNG(t, path)
	if cfg.Width != testbrowser.DesktopWidth || cfg.Height != testbrowser.DesktopHeight {
		t.Errorf("screenshot %dx%d, want %d wide", cfg.Width, cfg.Height, testbrowser.DesktopWidth)
	}
	if errs := testbrowser.ConsoleErrors(ctx); len(errs) > 0 {
		t.Errorf("console errors on a clean page: %v", errs)
	}
}

func decodePNG(t *testing.T, path string) (cfg struct{ Width, Height int }) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("screenshot file: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	b := img.Bounds()
	cfg.Width, cfg.Height = b.Dx(), b.Dy()
	return cfg
}

func TestInlineScriptBlockedByCSP(t *testing.T) {
	srv := site(t)
	ctx := testbrowser.New(t)

	testbrowser.Navigate(t, ctx, srv.URL+"/inline")
	testbrowser.WaitVisible(t, ctx, `body[data-external="ran"]`)
	if got := testbrowser.Title(t, ctx); got != "untouched" {
		t.Fatalf("title %q: the inline script ran despite script-src 'self'", got)
	}
	violation := testbrowser.WaitConsole(t, ctx, func(e testbrowser.Entry) bool {
		return e.Level == "error" && strings.Contains(e.Text, "Content Security Policy") && strings.Contains(e.Text, "inline script")
	})
	t.Logf("CSP violation reported as %s", violation)
	external := testbrowser.WaitConsole(t, ctx, func(e testbrowser.Entry) bool { return e.Source == "console" })
	if external.Level != "error" || external.Text != "external script says hello" || !strings.HasSuffix(external.URL, "/mark.js") {
		t.Errorf("console.error entry %s", external)
	}
	if n := len(testbrowser.ConsoleErrors(ctx)); n < 2 {
		t.Errorf("%d console errors, want the violation and console.error: %v", n, testbrowser.Console(ctx))
	}
}

func TestPhoneViewport(t *testing.T) {
	t.Setenv("CIVICGATE_ARTIFACTS", t.TempDir())
	srv := site(t)
	ctx := testbrowser.NewPhone(t)

	testbrowser.Navigate(t, ctx, srv.URL+"/")
	var width, height int
	var touch bool
	if err := chromedp.Run(ctx,
		chromedp.Evaluate(`window.innerWidth`, &width),
		chromedp.Evaluate(`window.innerHeight`, &height),
		chromedp.Evaluate(`navigator.maxTouchPoints > 0`, &touch),
	); err != nil {
		t.Fatal(err)
	}
	if width != testbrowser.PhoneWidth || height != testbrowser.PhoneHeight || !touch {
		t.Errorf("phone: viewport %dx%d, touch %v", width, height, touch)
	}
	path := testbrowser.Screenshot(t, ctx, "sign up/phone")
	if !strings.HasPrefix(path, os.Getenv("CIVICGATE_ARTIFACTS")) || filepath.Base(path) != "sign_up_phone.png" {
		t.Errorf("screenshot at %s", path)
	}
	if cfg := decodePNG(t, path); cfg.Width != testbrowser.PhoneWidth || cfg.Height != testbrowser.PhoneHeight {
		t.Errorf("phone screenshot %dx%d", cfg.Width, cfg.Height)
	}
}
