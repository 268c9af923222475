package webhooks

import (
	"context"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

// The endpoint API's changes go to the audit log the console's "Every
// change" page and `civicgate audit` read, through the key store's Audit
// the console and the key commands use (docs/design.md D60). Each action
// writes the name and target the console's webhook pages write for the same
// change (modules/console/webhooks.go): webhook.create, webhook.delete,
// webhook.rotate_secret, webhook.test and webhook.replay, each on the
// endpoint id.

// AuditRoleAPI is the audit log's role of a change made through the API: the
// actor is the key id civic_auth published ({civic.key_id}).
const AuditRoleAPI = "api"

// audit writes one entry for a change c made, within the request's database
// deadline ctx; a failure is logged, the change is done either way (as in the
// console).
func (h *Handler) audit(ctx context.Context, r *http.Request, c Caller, action, target, detail string) {
	if h.app == nil || h.app.pool == nil {
		return
	}
	actor := ""
	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		actor = repl.ReplaceAll("{"+contract.CivicKeyID+"}", "")
	}
	addr := r.RemoteAddr
	if ip, ok := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string); ok && ip != "" {
		addr = ip
	}
	err := keystore.Audit(ctx, h.app.pool, keystore.AuditEntry{Actor: actor, Role: AuditRoleAPI, OrgID: c.Org,
		Action: action, Target: target, Detail: detail, ClientAddr: addr})
	if err != nil {
		h.logger.Error("civic_webhooks: audit entry not written", zap.String("action", action), zap.Error(err))
	}
}
