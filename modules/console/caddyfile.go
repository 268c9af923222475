package console

import (
	"fmt"
	"sort"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("civic_console", caddyopt.Handler[Handler]())
	httpcaddyfile.RegisterDirectiveOrder("civic_console", httpcaddyfile.Before, "respond")
}

// TierConfig is one tier line as the console keeps it.
type TierConfig struct {
	Rates      string   `json:"rates"`
	CostBudget string   `json:"cost_budget,omitempty"`
	Families   []string `json:"families,omitempty"`
}

// OIDCConfig configures sign-in with an OpenID Connect provider
// (authorization code flow with PKCE).
type OIDCConfig struct {
	Issuer       string   `json:"issuer"`
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret,omitempty"`
	RedirectURL  string   `json:"redirect_url,omitempty"` // default https://<site host>/auth/callback
	Scopes       []string `json:"scopes,omitempty"`       // default openid email profile
	// Rules map the provider's claims to an organization and a role; the
	// first that matches signs the member in. A member no rule maps is refused.
	Rules []OIDCRule `json:"rules"`
}

// OIDCRule maps a claim to an organization and a role:
// `map email_domain example.org acme admin` (the email must be verified) or
// `map claim groups civic-ops * operator` (a string or a string in an array).
type OIDCRule struct {
	Claim string `json:"claim"` // "email_domain" or a claim name
	Value string `json:"value"`
	Org   string `json:"org"` // organization name; "*" for operators
	Role  string `json:"role"`
}

// UnmarshalCaddyfile sets up the handler from the directive:
//
//	civic_console {
//	    database <dsn>
//	    idle_timeout <duration>
//	    session_lifetime <duration>
//	    max_endpoints <n>
//	    tier <name> <rate>... [cost <rate>] [<family>...]   # import tiers.caddy
//	    oidc {
//	        issuer <url>
//	        client_id <id>
//	        client_secret <secret>
//	        redirect_url <url>
//	        scopes <scope>...
//	        map email_domain <domain> <org> <role>
//	        map claim <name> <value> <org|*> <role>       # repeated; first match wins
//	    }
//	    signup {                                          # signup.go; docs/design.md D74
//	        mode open|approve|closed
//	        tier <name>
//	        terms_url <url>
//	        api_url <url>
//	        site_url <https://console host>
//	        limit_ip|limit_address|limit_domain <rate>...
//	        allow_domains|deny_domains <domain>...
//	    }                                                 # mails: the civic_mail global option (modules/console/mailapp)
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyopt.Read(d, "civic_console", caddyopt.Block{
		"database":         caddyopt.String(&h.Database),
		"idle_timeout":     caddyopt.PositiveDuration(&h.IdleTimeout),
		"session_lifetime": caddyopt.PositiveDuration(&h.SessionLifetime),
		"max_endpoints":    caddyopt.Positive(&h.MaxEndpoints),
		"tier":             caddyopt.EachNamed(1, h.unmarshalTier),
		"oidc":             h.oidcBlock(),
		"signup":           h.signupBlock(), // signup.go
	})
}

func (h *Handler) unmarshalTier(o *caddyopt.Args) error {
	tl, err := contract.ParseTierLine(o.Rest())
	if err != nil {
		return o.Dispenser().Errf("civic_console: tier %s: %v", o.Name(), err)
	}
	if h.Tiers == nil {
		h.Tiers = map[string]TierConfig{}
	}
	if _, dup := h.Tiers[o.Name()]; dup {
		return o.Dispenser().Errf("civic_console: tier %s given twice", o.Name())
	}
	h.Tiers[o.Name()] = TierConfig{Rates: tl.Rates, CostBudget: tl.CostBudget, Families: tl.Families}
	return nil
}

func (h *Handler) oidcBlock() caddyopt.Option {
	c := &OIDCConfig{}
	return caddyopt.Sub(caddyopt.Block{
		"issuer":        caddyopt.String(&c.Issuer),
		"client_id":     caddyopt.String(&c.ClientID),
		"client_secret": caddyopt.String(&c.ClientSecret),
		"redirect_url":  caddyopt.String(&c.RedirectURL),
		"scopes":        caddyopt.Strings(&c.Scopes),
		"map": caddyopt.Each(func(a *caddyopt.Args) error {
			args := a.Dispenser().RemainingArgs()
			if len(args) == 0 {
				return a.Dispenser().ArgErr()
			}
			r, err := parseRule(args[0], args[1:])
			if err != nil {
				return a.Errf("%v", err)
			}
			c.Rules = append(c.Rules, r)
			return nil
		}),
	}).Then(func() { h.OIDC = c })
}

// parseRule reads `email_domain <domain> <org> <role>` or
// `claim <name> <value> <org|*> <role>`.
func parseRule(kind string, rest []string) (OIDCRule, error) {
	var r OIDCRule
	switch {
	case kind == "email_domain" && len(rest) == 3:
		r = OIDCRule{Claim: "email_domain", Value: strings.ToLower(rest[0]), Org: rest[1], Role: rest[2]}
	case kind == "claim" && len(rest) == 4:
		r = OIDCRule{Claim: rest[0], Value: rest[1], Org: rest[2], Role: rest[3]}
	default:
		return r, fmt.Errorf("want `email_domain <domain> <org> <role>` or `claim <name> <value> <org|*> <role>`")
	}
	return r, r.check()
}

func (r OIDCRule) check() error {
	if !keystore.ValidRole(r.Role) {
		return fmt.Errorf("role %q is not viewer, admin or operator", r.Role)
	}
	if (r.Org == "*") != (r.Role == keystore.RoleOperator) {
		return fmt.Errorf("organization * goes with the operator role, and the operator role with *")
	}
	if r.Claim == "" || r.Value == "" || r.Org == "" {
		return fmt.Errorf("empty claim, value or organization")
	}
	return nil
}

// tier is a configured tier, parsed.
type tier struct {
	Name     string
	Rates    []contract.Rate
	Cost     *contract.Rate
	Families []string
}

func parseTiers(cfg map[string]TierConfig) (map[string]tier, error) {
	out := make(map[string]tier, len(cfg))
	for name, c := range cfg {
		if !keystore.ValidTier(name) {
			return nil, fmt.Errorf("tier %q: bad name", name)
		}
		rs, err := contract.ParseRates(c.Rates)
		if err != nil {
			return nil, fmt.Errorf("tier %s: %w", name, err)
		}
		t := tier{Name: name, Rates: rs, Families: c.Families}
		if c.CostBudget != "" {
			cb, err := contract.ParseRate(c.CostBudget)
			if err != nil {
				return nil, fmt.Errorf("tier %s: cost: %w", name, err)
			}
			t.Cost = &cb
		}
		out[name] = t
	}
	return out, nil
}

// tierNames is the configured tiers' names, sorted.
func (h *Handler) tierNames() []string {
	names := make([]string, 0, len(h.tiers))
	for n := range h.tiers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Interface guard
var _ caddyfile.Unmarshaler = (*Handler)(nil)
