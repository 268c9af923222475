// Package hours is the metering export's source over the usage tables:
// export.Source read through modules/ratelimit/usage, which owns them. It
// sits on level 2 (internal/testkit/layering) because the export library and
// the usage library are both level-1 libraries of different modules
// (docs/design.md D73).
package hours

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/modules/ratelimit/usage"
	"github.com/civicgate/civicgate/modules/usageexport/export"
)

// Usage reads the hour rows the gateways flush (civicgate.usage_hour). A
// source of the per-operation hours is Usage plus one read of those rows for
// the page's (key, hour) pairs, filling Hour.Operations.
type Usage struct{ Pool *pgxpool.Pool }

// Hours implements export.Source.
func (u Usage) Hours(ctx context.Context, p export.Page) ([]export.Hour, error) {
	rows, err := usage.HoursAfter(ctx, u.Pool, usage.HoursAfterArgs{
		AfterStart: p.After.Start, AfterKey: p.After.KeyID, Before: p.Before, OrgID: p.OrgID, Limit: p.Limit,
	})
	if err != nil {
		return nil, fmt.Errorf("export: read hours: %w", err)
	}
	out := make([]export.Hour, len(rows))
	keyHours := make([]usage.KeyHour, len(rows))
	at := make(map[usage.KeyHour]int, len(rows))
	for i, r := range rows {
		out[i] = export.Hour{KeyID: r.KeyID, OrgID: r.OrgID, Start: r.Start, Requests: r.Admitted, Refused: r.Refused,
			ClientErrors: r.ClientErrors, ServerErrors: r.ServerErrors, Cost: r.Cost, MCPCalls: r.MCP}
		keyHours[i] = usage.KeyHour{KeyID: r.KeyID, Start: r.Start}
		at[keyHours[i]] = i
	}
	// Each hour's operations, when the gateways record them (docs/design.md D70).
	ops, err := usage.OperationHoursOf(ctx, u.Pool, keyHours)
	if err != nil {
		return nil, fmt.Errorf("export: read operation hours: %w", err)
	}
	for _, o := range ops {
		if i, ok := at[o.KeyHour]; ok {
			out[i].Operations = append(out[i].Operations, export.Operation{Hash: o.Hash, Type: o.Type, Name: o.Name,
				Requests: o.Requests, Errors: o.Errors, Cost: o.Cost})
		}
	}
	return out, nil
}

// Migrate creates or upgrades the tables the export reads and writes: the
// usage tables (usage.Migrate) and the export's cursor (export.Migrate).
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if err := usage.Migrate(ctx, pool); err != nil {
		return err
	}
	return export.Migrate(ctx, pool)
}
