package accesstoken

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Discovery and key set requests: https, or http to a loopback host only; no
// redirects (a redirect could lead anywhere, including to a host the checks
// below never saw); bodies bounded; a timeout on each request.

const (
	maxDiscoveryBytes = 256 << 10
	maxJWKSBytes      = 512 << 10
)

var errRedirect = errors.New("redirects are not followed")

// statusError is a response other than 200.
type statusError struct{ code int }

func (e *statusError) Error() string { return "status " + strconv.Itoa(e.code) }

func newHTTPClient(rt http.RoundTripper, timeout time.Duration) *http.Client {
	return &http.Client{
		Transport:     rt,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect },
	}
}

// checkFetchURL refuses what discovery and the key set must not be fetched
// from: not an absolute URL, credentials in it, a fragment, a scheme other
// than https — or http to a host that is not loopback.
func checkFetchURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	switch {
	case u.Host == "" || u.Opaque != "":
		return fmt.Errorf("%q: want an absolute URL", raw)
	case u.User != nil:
		return errors.New("must not hold credentials")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return fmt.Errorf("%q: must not have a fragment", raw)
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return nil
	case "http":
		if loopbackHost(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("%q: plain http only to a loopback host (127.0.0.0/8, ::1, localhost); use https", raw)
	default:
		return fmt.Errorf("%q: want https", raw)
	}
}

// loopbackHost reports whether a URL's host names this machine: localhost,
// 127.0.0.0/8, ::1 (also IPv4-mapped). A name is not resolved: only these
// spellings count.
func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback()
}

// origin is scheme://host:port, lower case, the port explicit.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = "443"
		if scheme == "http" {
			port = "80"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// get fetches rawURL and returns a 200 response's body, at most limit bytes.
func get(ctx context.Context, client *http.Client, rawURL string, limit int64) ([]byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the caller names the URL
		}
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10)) // keep the connection reusable
		return nil, nil, &statusError{resp.StatusCode}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the body: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, nil, fmt.Errorf("body larger than %d bytes", limit)
	}
	return body, resp.Header, nil
}

// discover returns the issuer's jwks_uri from its OpenID Connect discovery
// document, or — when that answers other than 200 — from its RFC 8414
// authorization server metadata. The document's issuer must be the issuer,
// and the jwks_uri on the issuer's origin.
func discover(ctx context.Context, client *http.Client, issuer string) (string, error) {
	oidc := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	jwks, err := discoverAt(ctx, client, oidc, issuer)
	var se *statusError
	if err == nil || !errors.As(err, &se) {
		return jwks, err
	}
	// RFC 8414 §3.1: the well-known segment goes between host and path.
	u, perr := url.Parse(issuer)
	if perr != nil {
		return "", err
	}
	u.Path = "/.well-known/oauth-authorization-server" + strings.TrimSuffix(u.Path, "/")
	u.RawPath, u.RawQuery = "", ""
	jwks, err2 := discoverAt(ctx, client, u.String(), issuer)
	if err2 != nil {
		return "", errors.Join(err, err2)
	}
	return jwks, nil
}

func discoverAt(ctx context.Context, client *http.Client, docURL, issuer string) (string, error) {
	body, _, err := get(ctx, client, docURL, maxDiscoveryBytes)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", docURL, err)
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", fmt.Errorf("%s: not a metadata document: %w", docURL, err)
	}
	if doc.Issuer != issuer {
		return "", fmt.Errorf("%s: issuer is %q, want exactly %q", docURL, doc.Issuer, issuer)
	}
	if doc.JWKSURI == "" {
		return "", fmt.Errorf("%s: no jwks_uri", docURL)
	}
	if err := checkFetchURL(doc.JWKSURI); err != nil {
		return "", fmt.Errorf("%s: jwks_uri %w", docURL, err)
	}
	ju, _ := url.Parse(doc.JWKSURI)
	iu, _ := url.Parse(issuer)
	if origin(ju) != origin(iu) {
		return "", fmt.Errorf("%s: jwks_uri %q is not on the issuer's origin %s (set jwks_url to trust it)", docURL, doc.JWKSURI, origin(iu))
	}
	return doc.JWKSURI, nil
}

// cacheLifetime is the Cache-Control max-age of a key set response clamped
// to [lo, hi]; no-store, no-cache or no max-age: lo.
func cacheLifetime(h http.Header, lo, hi time.Duration) time.Duration {
	d := lo
	for _, line := range h.Values("Cache-Control") {
		for dir := range strings.SplitSeq(line, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(dir), "=")
			switch strings.ToLower(name) {
			case "no-store", "no-cache":
				return lo
			case "max-age":
				n, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64)
				if err != nil || n < 0 {
					continue
				}
				n = min(n, int64(hi/time.Second)+1) // no overflow below
				d = time.Duration(n) * time.Second
			}
		}
	}
	return max(lo, min(d, hi))
}
