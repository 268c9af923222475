// Package testbrowser drives a real headless Chromium from tests through
// chromedp: New starts a browser with one tab for the test and closes it when
// the test ends; the helpers navigate, read, fill and submit pages, read the
// tab's cookies, take full-page screenshots kept as test artifacts, and
// collect what the page reports on its console (console.* calls, uncaught
// exceptions and browser log entries such as Content-Security-Policy
// violations).
//
// Every helper takes the test (it fails the test with t.Fatalf on error, so
// call it from the test's goroutine) and the context New returned (or one
// derived from it), and bounds its work by Timeout or the context's earlier
// deadline. Helpers wait for conditions (an element becoming visible, the
// load event, a console entry), never for a fixed time.
//
// Chromium comes from Debian's chromium package: `make browser` (or
// scripts/services.sh chromium) installs it.
package testbrowser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// Timeout bounds each helper's wait, unless the context ends sooner.
const Timeout = 15 * time.Second

// Desktop and phone viewport sizes, in CSS pixels: the page's
// window.innerWidth and innerHeight.
const (
	DesktopWidth  = 1280
	DesktopHeight = 900
	PhoneWidth    = 390 // a current phone held upright (e.g. iPhone 12–15)
	PhoneHeight   = 844
)

// Option changes how New sets up the tab.
type Option func(*config)

type config struct {
	phone bool
}

// Phone makes the tab emulate a phone: a 390×844 CSS-pixel viewport with
// mobile emulation (the page's <meta name="viewport"> is honoured, as on a
// real phone; a page without one is laid out 980 px wide and zoomed out) and
// touch events. The device pixel ratio is 1, to keep screenshots small.
func Phone() Option { return func(c *config) { c.phone = true } }

// NewPhone is New(t, Phone()).
func NewPhone(t testing.TB) context.Context { return New(t, Phone()) }

// chromiumPath finds the Chromium binary: /usr/bin/chromium, else chromium
// on PATH.
func chromiumPath() (string, error) {
	const debian = "/usr/bin/chromium"
	if fi, err := os.Stat(debian); err == nil && !fi.IsDir() {
		return debian, nil
	}
	return exec.LookPath("chromium")
}

// New starts a headless Chromium with a fresh profile and returns the context
// of its one tab, ready for chromedp.Run and this package's helpers. The
// browser is closed and its profile removed when the test ends. A missing
// Chromium fails the test: run `make browser` (scripts/services.sh chromium).
func New(t testing.TB, opts ...Option) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("needs headless Chromium: run by make test, skipped by make check (-short)")
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	path, err := chromiumPath()
	if err != nil {
		t.Fatalf("testbrowser: Chromium not found (/usr/bin/chromium, or chromium on PATH): run `make browser` "+
			"(scripts/services.sh chromium) to install it: %v", err)
	}
	profile := t.TempDir() // made before the browser's cleanup, so removed after it

	// The chromedp defaults (copied: the package-level array stays as it is)
	// plus the flags the tests rely on.
	allocOpts := append(append([]chromedp.ExecAllocatorOption(nil), chromedp.DefaultExecAllocatorOptions[:]...),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // the tests run as root, where Chromium's sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		// The console under test is served over HTTPS with a certificate from
		// Caddy's internal CA (and test servers use self-signed ones), which
		// this fresh profile does not trust.
		chromedp.IgnoreCertErrors,
		chromedp.WindowSize(DesktopWidth, DesktopHeight),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), allocOpts...)
	rec := &recorder{changed: make(chan struct{})}
	ctx, cancelTab := chromedp.NewContext(context.WithValue(allocCtx, recorderKey{}, rec),
		chromedp.WithErrorf(func(format string, args ...any) {
			rec.add(Entry{Source: "chromedp", Level: "error", Text: fmt.Sprintf(format, args...)})
		}))
	t.Cleanup(func() {
		// Close the browser gracefully and wait for it to exit, so that it
		// has stopped writing to the profile before TempDir removes it.
		if err := chromedp.Cancel(ctx); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("testbrowser: closing Chromium: %v", err)
		}
		cancelTab()
		cancelAlloc()
	})

	// Listen before the first navigation so no entry is missed.
	chromedp.ListenTarget(ctx, rec.listen)
	// The first Run starts the browser and opens the tab, which live as long
	// as the context it is given: ctx itself, not one with a timeout.
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("testbrowser: starting Chromium (%s): %v", path, err)
	}
	// The window size leaves the page less than the window's height (headless
	// Chromium keeps room for its own frame), so the viewport is set exactly.
	viewport := chromedp.EmulateViewport(DesktopWidth, DesktopHeight, chromedp.EmulateScale(1))
	if cfg.phone {
		viewport = chromedp.EmulateViewport(PhoneWidth, PhoneHeight,
			chromedp.EmulateScale(1), chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait)
	}
	run(t, ctx, "viewport", viewport)
	return ctx
}

// withTimeout bounds one helper's work.
func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, Timeout)
}

// run runs actions within Timeout and fails the test on error.
func run(t testing.TB, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	if err := runErr(ctx, actions...); err != nil {
		t.Fatalf("testbrowser: %s: %v", what, err)
	}
}

// Navigate loads url in the tab and waits for its load event and body. A
// load that failed before any HTTP exchange (Chromium's net::ERR_SSL_* and
// net::ERR_CONNECTION_* errors: the TLS handshake or the connection broke,
// seen from a freshly started browser on a loaded machine) is tried again,
// twice at most, and logged: no request reached the server, so even a
// single-use sign-in link is still unused.
func Navigate(t testing.TB, ctx context.Context, url string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		err := runErr(ctx, chromedp.Navigate(url), chromedp.WaitReady("body", chromedp.ByQuery))
		if err == nil {
			return
		}
		if attempt == 3 || !beforeHTTP(err) {
			t.Fatalf("testbrowser: navigate to %s: %v", url, err)
		}
		t.Logf("testbrowser: navigate to %s: %v; trying again", url, err)
	}
}

// beforeHTTP reports whether a page load error is one where no HTTP request
// was sent.
func beforeHTTP(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "net::ERR_SSL_") || strings.Contains(msg, "net::ERR_CONNECTION_")
}

// runErr runs actions within Timeout.
func runErr(ctx context.Context, actions ...chromedp.Action) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	return chromedp.Run(ctx, actions...)
}

// WaitVisible waits until the first element matching the CSS selector is
// visible (for instance, the page a form submission leads to).
func WaitVisible(t testing.TB, ctx context.Context, selector string) {
	t.Helper()
	run(t, ctx, "wait for "+selector, chromedp.WaitVisible(selector, chromedp.ByQuery))
}

// Text waits until the first element matching the CSS selector is visible
// and returns its visible text (innerText).
func Text(t testing.TB, ctx context.Context, selector string) string {
	t.Helper()
	var s string
	run(t, ctx, "text of "+selector, chromedp.Text(selector, &s, chromedp.ByQuery, chromedp.NodeVisible))
	return s
}

// Click waits until the first element matching the CSS selector is visible
// and clicks it with the mouse.
func Click(t testing.TB, ctx context.Context, selector string) {
	t.Helper()
	run(t, ctx, "click "+selector, chromedp.Click(selector, chromedp.ByQuery, chromedp.NodeVisible))
}

// SetValue sets the value of the first input, select or textarea matching
// the CSS selector, without key events.
func SetValue(t testing.TB, ctx context.Context, selector, value string) {
	t.Helper()
	run(t, ctx, "set value of "+selector, chromedp.SetValue(selector, value, chromedp.ByQuery, chromedp.NodeReady))
}

// SendKeys focuses the first visible element matching the CSS selector and
// types keys into it, as a person would (key events, appended to the value).
func SendKeys(t testing.TB, ctx context.Context, selector, keys string) {
	t.Helper()
	run(t, ctx, "type into "+selector, chromedp.SendKeys(selector, keys, chromedp.ByQuery, chromedp.NodeVisible))
}

// Submit submits the form that contains (or is) the first element matching
// the CSS selector. It does not wait for the next page: follow it with
// WaitVisible or Text on something that page shows.
func Submit(t testing.TB, ctx context.Context, selector string) {
	t.Helper()
	run(t, ctx, "submit "+selector, chromedp.Submit(selector, chromedp.ByQuery, chromedp.NodeReady))
}

// Location returns the tab's current URL.
func Location(t testing.TB, ctx context.Context) string {
	t.Helper()
	var s string
	run(t, ctx, "location", chromedp.Location(&s))
	return s
}

// Title returns the current document's title.
func Title(t testing.TB, ctx context.Context) string {
	t.Helper()
	var s string
	run(t, ctx, "title", chromedp.Title(&s))
	return s
}

// Cookies returns the cookies the browser would send to the tab's current
// URL, HttpOnly ones included, with their attributes (Secure, SameSite,
// Expires, …).
func Cookies(t testing.TB, ctx context.Context) []*network.Cookie {
	t.Helper()
	var cookies []*network.Cookie
	run(t, ctx, "cookies", chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		cookies, err = network.GetCookies().Do(ctx)
		return err
	}))
	return cookies
}

// Screenshot saves a full-page PNG of the tab as a test artifact and returns
// its path: $CIVICGATE_ARTIFACTS/<test name>/<name>.png when that variable is
// set, else <repository root>/test-artifacts/<test name>/<name>.png (the
// repository root is the nearest directory above the working directory with
// a go.mod; test-artifacts/ is ignored by git).
func Screenshot(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	var png []byte
	run(t, ctx, "screenshot", chromedp.FullScreenshot(&png, 100)) // quality 100: PNG
	base := os.Getenv("CIVICGATE_ARTIFACTS")
	if base == "" {
		root, err := repoRoot()
		if err != nil {
			t.Fatalf("testbrowser: screenshot: %v", err)
		}
		base = filepath.Join(root, "test-artifacts")
	}
	dir := filepath.Join(base, sanitize(t.Name()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("testbrowser: screenshot: %v", err)
	}
	path := filepath.Join(dir, sanitize(name)+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("testbrowser: screenshot: %v", err)
	}
	t.Logf("screenshot %s", path)
	return path
}

// repoRoot walks up from the working directory to the nearest go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory; set CIVICGATE_ARTIFACTS")
		}
		dir = parent
	}
}

// sanitize makes a test or artifact name safe as one path element: letters,
// digits, '-', '_' and '.' stay, anything else (subtest '/' included) becomes
// '_'.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			b[i] = '_'
		}
	}
	s = strings.Trim(string(b), ".")
	if s == "" {
		return "_"
	}
	return s
}
