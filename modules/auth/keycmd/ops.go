package keycmd

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// change is what a command changed, for its audit entry: the target is the
// key id for the key actions and the organization's name for the
// organization's, as the console writes them (docs/operations.md "Audit log").
type change struct{ target, detail string }

// do runs a checked command on t (the keys file or the database).
func (t target) do(ctx context.Context, sub string, args []string, o opts, out io.Writer) (change, error) {
	switch sub {
	case "migrate":
		// The key store's tables, then the usage tables `keys usage` and the
		// gateways' usage sinks use (docs/design.md D60).
		if err := keystore.Migrate(ctx, t.pool); err != nil {
			return change{}, err
		}
		if err := usage.Migrate(ctx, t.pool); err != nil {
			return change{}, err
		}
		fmt.Fprintln(out, "key and usage tables are up to date")
	case "issue":
		spec := keystore.IssueSpec{Org: o.org, Tier: o.tier, Env: o.env, Lifecycle: o.life}
		var iss keystore.Issued
		var err error
		if t.file != "" {
			iss, err = keystore.IssueToFileWith(t.file, spec)
		} else {
			iss, err = keystore.IssueWith(ctx, t.pool, spec)
		}
		if err != nil {
			return change{}, err
		}
		printIssued(out, iss)
		if !o.life.ExpiresAt.IsZero() {
			fmt.Fprintf(out, "Expires: %s (then refused with 401 \"API key expired\")\n", stamp(o.life.ExpiresAt))
		}
		return change{iss.ID, o.env + ", tier " + o.tier + o.life.AuditDetail()}, nil
	case "rotate":
		spec := keystore.RotateSpec{Org: o.org, Tier: o.tier, Env: o.env, Overlap: o.overlap}
		var rot keystore.Rotation
		var err error
		if t.file != "" {
			rot, err = keystore.RotateFile(t.file, spec)
		} else {
			rot, err = keystore.Rotate(ctx, t.pool, spec)
		}
		if err != nil {
			return change{}, err
		}
		printIssued(out, rot.Issued)
		for _, id := range rot.RotatedOut {
			fmt.Fprintf(out, "Rotated out: %s\n", id)
		}
		if rot.Rotating != "" {
			fmt.Fprintf(out, "Rotating until %s: %s (still accepted until then; `keys revoke %s` ends it sooner)\n",
				stamp(rot.Until), rot.Rotating, rot.Rotating)
		}
		detail := o.env + ", overlap " + o.overlap.String()
		if len(rot.RotatedOut) > 0 {
			detail += ", rotated out " + strings.Join(rot.RotatedOut, " ")
		}
		return change{rot.ID, detail}, nil
	case "revoke":
		var rev keystore.Revocation
		var err error
		if t.file != "" {
			rev, err = keystore.RevokeFile(t.file, args[0])
		} else {
			rev, err = keystore.Revoke(ctx, t.pool, args[0])
		}
		if err != nil {
			return change{}, err
		}
		switch rev.Was {
		case keystore.StatusRotating:
			fmt.Fprintf(out, "Revoked: %s (it was rotating; its overlap ends now)\n", rev.KeyID)
		case keystore.StatusRotated:
			fmt.Fprintf(out, "Revoked: %s (it had already been rotated out)\n", rev.KeyID)
		default:
			fmt.Fprintf(out, "Revoked: %s\n", rev.KeyID)
		}
		return change{rev.KeyID, "was " + rev.Was}, nil
	case "suspend", "resume":
		status := keystore.OrgSuspended
		if sub == "resume" {
			status = keystore.OrgActive
		}
		var err error
		if t.file != "" {
			err = keystore.SetOrgStatusFile(t.file, o.org, status)
		} else {
			err = keystore.SetOrgStatus(ctx, t.pool, o.org, status)
		}
		if err != nil {
			return change{}, err
		}
		fmt.Fprintf(out, "Organization %s: %s\n", o.org, status)
		return change{o.org, ""}, nil
	case "set-tier":
		n, err := keystore.SetTier(ctx, t.pool, o.org, o.tier)
		if err != nil {
			return change{}, err
		}
		fmt.Fprintf(out, "Organization %s: %d live key(s) moved to tier %s (gateways apply it within a second)\n", o.org, n, o.tier)
		return change{o.org, o.tier + " (" + keysChanged(n) + " changed)"}, nil
	case "delete-org":
		var del keystore.Deletion
		var err error
		if t.file != "" {
			del, err = keystore.DeleteOrgFile(t.file, o.org)
		} else {
			del, err = keystore.DeleteOrg(ctx, t.pool, o.org)
		}
		if err != nil {
			return change{}, err
		}
		hooks := fmt.Sprintf("%d webhook endpoint(s) removed with their deliveries", del.Endpoints)
		switch {
		case t.file != "":
			hooks = "a keys file holds no webhook endpoints"
		case !del.WebhookTables:
			hooks = "no webhooks tables in this database"
		}
		fmt.Fprintf(out, "Organization %s (%s) deleted: %d key(s) revoked; %s. Its rows are kept for audit; the name is not reused.\n",
			o.org, del.OrgID, del.Revoked, hooks)
		return change{o.org, keysChanged(int64(del.Revoked)) + " revoked"}, nil
	case "list":
		f := keystore.ListFilter{Org: o.org, Env: o.env, Tier: o.tier, ExpiringWithin: o.expiringWithin}
		var keys []keystore.KeyInfo
		var err error
		if t.file != "" {
			keys, err = keystore.ListFile(t.file, f)
		} else {
			keys, err = keystore.List(ctx, t.pool, f)
		}
		if err != nil {
			return change{}, err
		}
		if o.json {
			return change{}, printListJSON(out, keys)
		}
		return change{}, printList(out, keys)
	}
	return change{}, nil
}

// keysChanged is "1 key" or "N keys", as the console's audit details read.
func keysChanged(n int64) string {
	if n == 1 {
		return "1 key"
	}
	return strconv.FormatInt(n, 10) + " keys"
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func stampOr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return stamp(*t)
}

// printList prints the table of `keys list`: ROTATES_OUT is the end of a
// rotation overlap (for a rotating key: when it stops being accepted),
// EXPIRES the key's expiry, LABELS its labels (k=v,k=v) and NAME its name,
// last since it may hold spaces ("-" for none).
func printList(out io.Writer, keys []keystore.KeyInfo) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tORG\tORG_STATUS\tENV\tTIER\tPREFIX\tSTATUS\tCREATED\tRETIRED\tROTATES_OUT\tEXPIRES\tLABELS\tNAME")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s…\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Org, k.OrgStatus, k.Env, k.Tier, k.Prefix, k.Status,
			stamp(k.CreatedAt), stampOr(k.RetiredAt), stampOr(k.RotatesOutAt), stampOr(k.ExpiresAt),
			cmp.Or(keystore.FormatLabels(k.Labels), "-"), cmp.Or(k.Name, "-"))
	}
	return tw.Flush()
}

// listedKey is one key of `keys list --json` (never a key or a hash).
type listedKey struct {
	ID           string            `json:"id"`
	Org          string            `json:"org"`
	OrgStatus    string            `json:"org_status"`
	Env          string            `json:"env"`
	Tier         string            `json:"tier"`
	Prefix       string            `json:"prefix"`
	Status       string            `json:"status"`
	CreatedAt    time.Time         `json:"created_at"`
	RetiredAt    *time.Time        `json:"retired_at"`
	RotatesOutAt *time.Time        `json:"rotates_out_at"`
	ExpiresAt    *time.Time        `json:"expires_at"`
	Name         string            `json:"name"`
	Labels       map[string]string `json:"labels"`
}

// printListJSON prints {"keys":[…]} (an empty list is []).
func printListJSON(out io.Writer, keys []keystore.KeyInfo) error {
	utc := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		u := t.UTC()
		return &u
	}
	doc := struct {
		Keys []listedKey `json:"keys"`
	}{Keys: make([]listedKey, 0, len(keys))}
	for _, k := range keys {
		labels := k.Labels
		if labels == nil {
			labels = map[string]string{} // always an object: {} rather than null
		}
		doc.Keys = append(doc.Keys, listedKey{ID: k.ID, Org: k.Org, OrgStatus: k.OrgStatus, Env: k.Env, Tier: k.Tier,
			Prefix: k.Prefix, Status: k.Status, CreatedAt: k.CreatedAt.UTC(), RetiredAt: utc(k.RetiredAt), RotatesOutAt: utc(k.RotatesOutAt),
			ExpiresAt: utc(k.ExpiresAt), Name: k.Name, Labels: labels})
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("encode the list: %w", err)
	}
	return nil
}
