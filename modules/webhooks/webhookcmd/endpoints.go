package webhookcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/clirun"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// endpointFlags parses --org (and --id when needID) of `endpoints list|delete`.
func endpointFlags(name string, args []string, needID bool) (org, id string, err error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&org, "org", "", "organization name or id")
	if needID {
		fs.StringVar(&id, "id", "", "endpoint id (we_…)")
	}
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return "", "", clirun.Usage(fmt.Sprintf("endpoints %s takes --org ORG%s", name, map[bool]string{true: " --id ID"}[needID]))
	}
	if org == "" {
		return "", "", clirun.Usage("--org is required")
	}
	if needID && id == "" {
		return "", "", clirun.Usage("--id is required")
	}
	return org, id, nil
}

// withOrg resolves org in the key store and runs f with the store (which
// needs no key material to list or delete: nothing is sealed or opened).
func withOrg(ctx context.Context, getenv func(string) string, org string, f func(context.Context, *store.Store, string) error) error {
	return withPool(ctx, getenv, func(ctx context.Context, pool *pgxpool.Pool) error {
		s := store.New(pool, nil)
		id, err := s.ResolveOrg(ctx, org)
		if errors.Is(err, store.ErrNoOrg) {
			return fmt.Errorf("no organization %q", org)
		}
		if err != nil {
			return err
		}
		return f(ctx, s, id)
	})
}

// listEndpoints is `civicgate webhooks endpoints list --org ORG`: the
// store's ListEndpoints, the API's list, as a table.
func listEndpoints(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	org, _, err := endpointFlags("list", args, false)
	if err != nil {
		return err
	}
	return withOrg(ctx, getenv, org, func(ctx context.Context, s *store.Store, orgID string) error {
		eps, err := s.ListEndpoints(ctx, orgID)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tURL\tFAMILIES\tSTATE\tCREATED")
		for _, e := range eps {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.ID, e.URL, strings.Join(e.Families, ","), state(e), e.CreatedAt.Format(time.RFC3339))
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		return nil
	})
}

// state is an endpoint's status with its reason: active, disabled (<reason>),
// unusable (<reason>).
func state(e store.Endpoint) string {
	switch {
	case e.Status == store.StatusUnusable && e.UnusableReason != "":
		return e.Status + " (" + e.UnusableReason + ")"
	case e.Status == store.StatusDisabled && e.DisabledReason != "":
		return e.Status + " (" + e.DisabledReason + ")"
	}
	return e.Status
}

// deleteEndpoint is `civicgate webhooks endpoints delete --org ORG --id ID`:
// the store's DeleteEndpoint, the API's DELETE (its deliveries go with it).
func deleteEndpoint(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	org, id, err := endpointFlags("delete", args, true)
	if err != nil {
		return err
	}
	return withOrg(ctx, getenv, org, func(ctx context.Context, s *store.Store, orgID string) error {
		err := s.DeleteEndpoint(ctx, orgID, id)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("organization %q has no endpoint %q", org, id)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted endpoint %s of organization %s and its deliveries\n", id, org)
		return nil
	})
}
