package keycmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// The tier a key is issued to must be one the gateway defines: civic_auth
// refuses every request of a key whose tier its configuration lacks (403),
// and nothing in the database says which tiers exist. The CLI reads them
// from the gateway's Caddyfile (docs/design.md D41).

// CaddyfileEnv names the gateway's Caddyfile when --caddyfile is not given.
const CaddyfileEnv = "CIVICGATE_CADDYFILE"

// checkTier refuses a tier the gateway's Caddyfile does not define, for the
// commands that set one (issue, rotate --tier, set-tier). With no Caddyfile
// named (--caddyfile, CIVICGATE_CADDYFILE), it warns on stderr and lets the
// command go on.
func checkTier(sub string, o opts, stderr io.Writer, getenv func(string) string) error {
	if o.tier == "" || (sub != "issue" && sub != "rotate" && sub != "set-tier") {
		return nil
	}
	path := o.caddyfile
	if path == "" {
		path = getenv(CaddyfileEnv)
	}
	if path == "" {
		fmt.Fprintf(stderr, "civicgate keys %s: WARNING: tier %q NOT CHECKED: no Caddyfile to read the gateway's tiers from "+
			"(--caddyfile PATH or %s). A key whose tier the running gateway does not define is refused "+
			"with 403 on every request.\n", sub, o.tier, CaddyfileEnv)
		return nil
	}
	tiers, err := gatewayTiers(path)
	if err != nil {
		return err
	}
	if !slices.Contains(tiers, o.tier) {
		return fmt.Errorf("tier %q is not defined in %s (its tiers: %s); a key of a tier the gateway does not define "+
			"is refused with 403 on every request", o.tier, path, strings.Join(tiers, ", "))
	}
	return nil
}

// gatewayTiers returns the sorted tier names of the civic_auth global option
// of the Caddyfile at path (imports followed, {$VAR} read from the
// environment as the adapter does), or of the civic_auth app of a JSON
// configuration (a .json file).
func gatewayTiers(path string) ([]string, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the gateway's Caddyfile: %w", err)
	}
	var tiers []string
	if strings.EqualFold(filepath.Ext(path), ".json") {
		tiers, err = jsonTiers(body)
	} else {
		tiers, err = caddyfileTiers(path, body)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(tiers) == 0 {
		return nil, fmt.Errorf("%s defines no civic_auth tier: give the Caddyfile the gateway runs (--caddyfile PATH or %s)",
			path, CaddyfileEnv)
	}
	slices.Sort(tiers)
	return tiers, nil
}

// caddyfileTiers reads the names of the `tier` lines in the civic_auth
// global option block.
func caddyfileTiers(path string, body []byte) ([]string, error) {
	blocks, err := caddyfile.Parse(path, body)
	if err != nil {
		return nil, err
	}
	if len(blocks) == 0 || len(blocks[0].Keys) != 0 {
		return nil, nil // no global options block
	}
	var tiers []string
	for _, seg := range blocks[0].Segments {
		if seg.Directive() != "civic_auth" {
			continue
		}
		d := caddyfile.NewDispenser(seg)
		d.Next()
		for nesting := d.Nesting(); d.NextBlock(nesting); {
			if d.Val() == "tier" && d.NextArg() && !slices.Contains(tiers, d.Val()) {
				tiers = append(tiers, d.Val())
			}
		}
	}
	return tiers, nil
}

// jsonTiers reads apps.civic_auth.tiers of a JSON configuration.
func jsonTiers(body []byte) ([]string, error) {
	var cfg struct {
		Apps struct {
			CivicAuth struct {
				Tiers map[string]json.RawMessage `json:"tiers"`
			} `json:"civic_auth"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(body, &cfg); err != nil {
		return nil, errors.New("not a JSON configuration")
	}
	var tiers []string
	for name := range cfg.Apps.CivicAuth.Tiers {
		tiers = append(tiers, name)
	}
	return tiers, nil
}
