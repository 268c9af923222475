package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testhydra"
	"github.com/civicgate/civicgate/modules/contract"
)

// testJWTSuspendedOrg: `civicgate keys suspend --org NAME` refuses the
// tokens whose org_id is that organization's id in the key store (403, and
// 4403 "Organization suspended" on an open socket); resume serves them
// again (docs/identity.md "In the gateway", Organizations).
func testJWTSuspendedOrg(t *testing.T, g *jwtStack, sfx string) {
	s := g.s
	name := "jwt-suspended-" + sfx
	s.IssueKey(name, "free", "live") // creates the organization
	orgID := orgIDByName(t, s, name)
	client, libClient := "svc-susp-"+sfx, "svc-susp-lib-"+sfx
	g.client(t, client, map[string]any{"plan": "enterprise", "org_id": orgID})
	g.client(t, libClient, map[string]any{"plan": "jwtlib", "org_id": orgID})
	tok := g.token(t, client)
	if x := getBills(t, s, tok); x.status != http.StatusOK {
		t.Fatalf("before the suspension: %d %s", x.status, x.body)
	}
	ts := g.openTokenSocket(t, g.token(t, libClient))
	g.awaitSubscribers(t, 1)

	s.Run(s.Bins.Civicgate, "keys", "suspend", "--org", name)
	returned := time.Now()
	e := ts.awaitEnd(t, streamCeiling, "keys suspend")
	if e.code != 4403 || e.reason != contract.MsgOrgSuspended {
		t.Fatalf("socket ended with %d %q (%v), want 4403 %q", e.code, e.reason, e.err, contract.MsgOrgSuspended)
	}
	t.Logf("socket closed %s after `keys suspend` returned", e.at.Sub(returned).Round(time.Millisecond))
	g.awaitSubscribers(t, 0)
	wantRefusal(t, "a token of the suspended organization", getBills(t, s, tok), http.StatusForbidden, contract.MsgOrgSuspended, "")
	wantRefusal(t, "a new token of the suspended organization", getBills(t, s, g.token(t, client)), http.StatusForbidden, contract.MsgOrgSuspended, "")

	s.Run(s.Bins.Civicgate, "keys", "resume", "--org", name)
	stack.WaitFor(t, 20*time.Second, "the token served again", func() error {
		if x := getBills(t, s, tok); x.status != http.StatusOK {
			return fmt.Errorf("%d %s", x.status, x.body)
		}
		return nil
	})
}

// testJWTStreams: a subscription socket opened with a token is closed with
// 4403 "token expired" at the token's exp, and with 4403 "Access token
// denied" after `civicgate tokens deny --sub`.
func testJWTStreams(t *testing.T, g *jwtStack, sfx string) {
	s := g.s
	t.Run("closed at exp", func(t *testing.T) {
		client := "svc-lib-short-" + sfx
		g.client(t, client, map[string]any{"plan": "jwtlib", "org_id": "idp-org-lib"})
		g.setLifespan(t, client, 8*time.Second)
		tok := g.token(t, client)
		exp := decodeJWT(t, tok).exp()
		ts := g.openTokenSocket(t, tok)
		g.awaitSubscribers(t, 1)
		e := ts.awaitEnd(t, time.Until(exp)+streamCeiling, "the token's exp")
		if e.code != 4403 || e.reason != "token expired" {
			t.Fatalf("socket ended with %d %q (%v), want 4403 \"token expired\"", e.code, e.reason, e.err)
		}
		// exp has a second's resolution: the close may precede the clock's next second.
		t.Logf("socket closed %s after the token's exp", e.at.Sub(exp).Round(time.Millisecond))
		g.awaitSubscribers(t, 0)
	})
	t.Run("closed on a denial", func(t *testing.T) {
		client := "svc-lib-" + sfx
		g.client(t, client, map[string]any{"plan": "jwtlib", "org_id": "idp-org-lib"})
		tok := g.token(t, client)
		ts := g.openTokenSocket(t, tok)
		g.awaitSubscribers(t, 1)
		started := time.Now()
		s.Run(s.Bins.Civicgate, "tokens", "deny", "--sub", client, "--reason", "e2e")
		returned := time.Now()
		e := ts.awaitEnd(t, streamCeiling, "tokens deny")
		if e.code != 4403 || e.reason != "Access token denied" {
			t.Fatalf("socket ended with %d %q (%v), want 4403 \"Access token denied\"", e.code, e.reason, e.err)
		}
		// Negative: the socket closed before the command's process was seen
		// to exit (its NOTIFY is sent when its transaction commits).
		t.Logf("socket closed %s after `tokens deny` returned, %s after it started (goal: within 2 s, docs/operations.md \"Denying tokens\")",
			e.at.Sub(returned).Round(time.Millisecond), e.at.Sub(started).Round(time.Millisecond))
		g.awaitSubscribers(t, 0)
		post := func() exchange {
			return send(t, s, http.MethodPost, "/v1/graphql", tok, usageDoc)
		}
		wantRefusal(t, "a denied token", post(), http.StatusUnauthorized, "Access token denied", g.invalidToken("Access token denied"))
		// So is any other token of the subject.
		wantRefusal(t, "another token of the denied subject", getBills(t, s, g.token(t, client)), http.StatusUnauthorized,
			"Access token denied", g.invalidToken("Access token denied"))
		s.Run(s.Bins.Civicgate, "tokens", "undeny", "--sub", client)
		stack.WaitFor(t, 20*time.Second, "the token served after undeny", func() error {
			// jwtlib holds no records family: the guard's 403 is admission.
			if x := post(); x.status != http.StatusForbidden || x.body != `{"error":"`+contract.MsgNotEntitled+`"}` {
				return fmt.Errorf("%d %s", x.status, x.body)
			}
			return nil
		})
	})
}

// testJWTRotation: a key added at the IdP signs the next tokens, which are
// accepted without a reload while tokens of the old key still are; a key
// the IdP withdraws stops verifying once the set is fetched again, for
// tokens the gateway verified before too (docs/identity.md "Keys").
func testJWTRotation(t *testing.T, g *jwtStack, client string) {
	s := g.s
	seen := g.token(t, client)
	if x := getBills(t, s, seen); x.status != http.StatusOK {
		t.Fatalf("before the rotation: %d %s", x.status, x.body)
	}
	// Tokens of the old key first shown after the rotation, and after the
	// old key's withdrawal.
	afterRotation, afterWithdrawal := g.token(t, client), g.token(t, client)
	oldKid := decodeJWT(t, seen).kid()
	newKid := g.idp.RotateKeys(t)
	rotated := g.token(t, client)
	if k := decodeJWT(t, rotated).kid(); k != newKid || k == oldKid {
		t.Fatalf("the token after RotateKeys has kid %s, want %s", k, newKid)
	}
	// An unknown kid makes the gateway fetch the set, at most once per
	// 10 s (docs/identity.md "Keys"): a fetch shortly before delays it.
	awaitServed := func(what, tok string) {
		t.Helper()
		refusals := 0
		stack.WaitFor(t, 30*time.Second, what+" served", func() error {
			x := getBills(t, s, tok)
			if x.status == http.StatusOK {
				return nil
			}
			refusals++
			wantRefusal(t, what+" before the set is fetched again", x, http.StatusUnauthorized,
				"Access token signed by an unknown key", g.invalidToken("Access token signed by an unknown key"))
			return fmt.Errorf("%d %s", x.status, x.body)
		})
		t.Logf("%s: refused %d time(s) before the set was fetched again", what, refusals)
	}
	awaitServed("the new key's token", rotated)
	for name, tok := range map[string]string{"verified before": seen, "first shown now": afterRotation} {
		if x := getBills(t, s, tok); x.status != http.StatusOK {
			t.Fatalf("the old key's token %s, after the rotation: %d %s", name, x.status, x.body)
		}
	}

	t.Run("withdrawn key", func(t *testing.T) {
		current := g.token(t, client) // of the new key, never shown
		hydraAdmin(t, g.idp, http.MethodDelete, "/admin/keys/"+testhydra.AccessTokenKeySet+"/"+oldKid, "", http.StatusNoContent)
		// Another rotation: the next token's kid makes the gateway fetch
		// the set, which no longer lists the old key.
		g.idp.RotateKeys(t)
		awaitServed("the newest key's token", g.token(t, client))
		if x := getBills(t, s, current); x.status != http.StatusOK {
			t.Fatalf("a token of a key still published: %d %s", x.status, x.body)
		}
		for name, tok := range map[string]string{"never shown": afterWithdrawal, "verified before": seen, "verified after the rotation": afterRotation} {
			wantRefusal(t, "withdrawn key, token "+name, getBills(t, s, tok), http.StatusUnauthorized,
				"Access token signed by an unknown key", g.invalidToken("Access token signed by an unknown key"))
		}
	})
}
