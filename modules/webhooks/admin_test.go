package webhooks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/webhooks/egress"
	"github.com/civicgate/civicgate/modules/webhooks/internal/feedtest"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

func TestAdminTargets(t *testing.T) {
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		if host == "admin.internal" {
			return []netip.Addr{netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, errors.New("no such host")
	}
	local := []netip.Addr{netip.MustParseAddr("192.0.2.7"), netip.MustParseAddr("2001:db8::7")}
	dflt, err := caddy.ParseNetworkAddress(caddy.DefaultAdminListen)
	if err != nil {
		t.Fatal(err)
	}
	loop := func(port uint) []string {
		return []string{fmt.Sprintf("127.0.0.0/8:%d", port), fmt.Sprintf("::1/128:%d", port)}
	}
	for _, tc := range []struct {
		listens []string
		want    []string
	}{
		{nil, loop(dflt.StartPort)},
		{[]string{"localhost:2996"}, loop(2996)},
		{[]string{"127.0.0.1:3000"}, loop(3000)},
		{[]string{"[::1]:3001"}, loop(3001)},
		{[]string{":2019"}, append(loop(2019), "192.0.2.7/32:2019", "2001:db8::7/128:2019")},
		{[]string{"0.0.0.0:2020"}, append(loop(2020), "192.0.2.7/32:2020", "2001:db8::7/128:2020")},
		{[]string{"203.0.113.9:2021"}, []string{"203.0.113.9/32:2021"}},
		{[]string{"admin.internal:2022"}, append([]string{"10.1.2.3/32:2022"}, loop(2022)...)},
		{[]string{"unix//run/caddy-admin.sock"}, nil},
		{[]string{""}, nil}, // the default
	} {
		got, err := adminTargets(context.Background(), tc.listens, local, lookup)
		if err != nil {
			t.Fatalf("%v: %v", tc.listens, err)
		}
		var s []string
		for _, x := range got {
			s = append(s, fmt.Sprintf("%s:%d", x.Prefix, x.Port))
		}
		want := append(tc.want, loop(dflt.StartPort)...) // the default address is always denied too
		slices.Sort(s)
		slices.Sort(want)
		want = slices.Compact(want)
		if !slices.Equal(s, want) {
			t.Errorf("%v: %v, want %v", tc.listens, s, want)
		}
	}
	if _, err := adminTargets(context.Background(), []string{"nowhere.internal:2019"}, nil, lookup); err == nil {
		t.Fatal("an admin host that does not resolve was accepted")
	}
}

// TestAdminEndpointNeverATarget: with every loopback target allowed (make
// up's insecure_allow_loopback on), Caddy's admin endpoint — its address read
// from the running configuration (admin localhost:2996 here) — is refused at
// registration (400 with the reason, by address and by name) and, for an
// endpoint written straight to the database, at claim (set aside as
// unusable with "endpoint url no longer allowed", never dialled: the admin
// API's configuration is unchanged; the dial-time guard behind it is
// egress's and delivery/TestSSRFTargetsRefused's). Another loopback port is
// accepted (control).
func TestAdminEndpointNeverATarget(t *testing.T) {
	db := feedtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	iss, err := keystore.Issue(ctx, db.Pool, "acme", "paid", "live")
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, db.DSN, "insecure_allow_loopback on")

	listens, ok := adminListens(caddy.ActiveContext())
	if !ok || !slices.Equal(listens, []string{fmt.Sprintf("localhost:%d", adminPort)}) {
		t.Fatalf("admin address of the running config: %v %v", listens, ok)
	}
	for _, u := range []string{fmt.Sprintf("http://127.0.0.1:%d/load", adminPort), fmt.Sprintf("http://localhost:%d/stop", adminPort),
		fmt.Sprintf("http://[::1]:%d/config/", adminPort), fmt.Sprintf("http://127.0.0.2:%d/reverse_proxy/upstreams", adminPort)} {
		r := g.do(t, "POST", "/v1/webhook-endpoints", iss.Key, `{"url":"`+u+`"}`)
		if r.status != 400 || !strings.HasPrefix(r.body, `{"errors":[{"message":"url: `) || !strings.Contains(r.body, "is Caddy's admin endpoint") {
			t.Fatalf("%s: %d %s", u, r.status, r.body)
		}
	}
	rc := newHookReceiver(t)
	want(t, g.do(t, "POST", "/v1/webhook-endpoints", iss.Key, `{"url":"`+rc.srv.URL+`/hook"}`), 201, "")

	before := adminConfig(t)
	app, err := caddy.ActiveContext().App("civic_webhooks")
	if err != nil {
		t.Fatal(err)
	}
	ep, _, err := app.(*App).store.CreateEndpoint(ctx, time.Now(), store.EndpointSpec{Org: iss.OrgID, Env: "live",
		URL: fmt.Sprintf("http://127.0.0.1:%d/load", adminPort), Families: []string{"bills"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	db.Insert(t, "bills", 1)
	rc.waitN(t, 1) // the other endpoint got the event: the round ran
	// A stored URL the URL rules refuse is set aside at claim (docs/design.md D39), before any dial:
	// the delivery failed with no attempt, the endpoint unusable.
	var ds []store.Delivery
	testenv.Eventually(t, 30*time.Second, "the delivery to the admin endpoint to be set aside", func() error {
		var err error
		if ds, _, err = app.(*App).store.Deliveries(ctx, iss.OrgID, ep.ID, 0, 10); err != nil {
			t.Fatal(err)
		}
		if len(ds) != 1 {
			return fmt.Errorf("%d deliveries", len(ds))
		}
		if ds[0].Status != "failed" {
			return fmt.Errorf("status %s, %d attempts, last_error %s", ds[0].Status, ds[0].Attempts, show(ds[0].LastError))
		}
		return nil
	})
	if ds[0].Attempts != 0 || ds[0].LastError == nil || *ds[0].LastError != store.ReasonURL || ds[0].LastStatusCode != nil {
		t.Fatalf("delivery to the admin endpoint: %d attempts, last_error %s, last_status_code %s", ds[0].Attempts,
			show(ds[0].LastError), show(ds[0].LastStatusCode))
	}
	if got, err := app.(*App).store.GetEndpoint(ctx, iss.OrgID, ep.ID); err != nil || got.Status != store.StatusUnusable {
		t.Fatalf("endpoint %+v %v", got, err)
	}
	if after := adminConfig(t); after != before {
		t.Fatal("the admin API's configuration changed")
	}
}

// show prints a nullable value.
func show[T any](p *T) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

// adminConfig is the running configuration, from the admin API.
func adminConfig(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://localhost:%d/config/", adminPort))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "civic_webhooks") {
		t.Fatalf("admin config: %d %.200s", resp.StatusCode, b)
	}
	return string(b)
}

// TestLoopbackAllowlist: `insecure_allow_loopback <host:port>...` admits
// exactly the listed loopback targets (plain http), and refuses other
// loopback ports and the admin endpoint at registration.
func TestLoopbackAllowlist(t *testing.T) {
	db := feedtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	iss, err := keystore.Issue(ctx, db.Pool, "acme", "paid", "live")
	if err != nil {
		t.Fatal(err)
	}
	rc := newHookReceiver(t)
	ap := netip.MustParseAddrPort(strings.TrimPrefix(rc.srv.URL, "http://"))
	g := startGateway(t, db.DSN, fmt.Sprintf("insecure_allow_loopback %s [::1]:%d", ap, ap.Port()))
	r := g.do(t, "POST", "/v1/webhook-endpoints", iss.Key, `{"url":"`+rc.srv.URL+`/hook"}`)
	want(t, r, 201, "")
	db.Insert(t, "members", 1)
	rc.waitN(t, 1)
	for _, u := range []string{fmt.Sprintf("http://127.0.0.1:%d/hook", ap.Port()+1), fmt.Sprintf("http://localhost:%d/stop", adminPort),
		"https://127.0.0.1/"} {
		r := g.do(t, "POST", "/v1/webhook-endpoints", iss.Key, `{"url":"`+u+`"}`)
		if r.status != 400 || !strings.Contains(r.body, "loopback") && !strings.Contains(r.body, "admin endpoint") {
			t.Fatalf("%s: %d %s", u, r.status, r.body)
		}
	}
	app, err := caddy.ActiveContext().App("civic_webhooks")
	if err != nil {
		t.Fatal(err)
	}
	pol := app.(*App).policy
	if pol.AllowLoopback || len(pol.LoopbackTargets) != 2 || egress.Refused(pol.CheckAddrPort(ap)) {
		t.Fatalf("policy %+v", pol)
	}
}
