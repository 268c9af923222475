package migrations_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/civicgate/civicgate/backend/migrations"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestLowerArrayEqualsTheReference: migration 0106's civic_lower_array gives what 0001's did (unnest, lower,
// array_agg: written out here as the reference) for the arrays the filters, the GIN indexes and the stored
// issue_areas_lower see — NULL, empty, NULL elements, the word "NULL", quotes, backslashes, braces, commas,
// spaces, non-ASCII — and the stored column holds it.
func TestLowerArrayEqualsTheReference(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := migrations.ApplyVersions(ctx, pool); err != nil {
		t.Fatal(err)
	}
	cases := [][]*string{
		nil, {}, {nil}, {ptr("NULL")}, {ptr("null"), nil, ptr("NuLL")},
		{ptr(`Say "Hi"`), ptr(`back\slash`), ptr(`{Brace}`), ptr("A,B"), ptr(" Spaced "), ptr("")},
		{ptr("ÉNERGIE"), ptr("ΟΔΟΣ"), ptr("İSTANBUL"), ptr("DEF"), ptr("hcr")},
	}
	for i, c := range cases {
		var same, stored bool
		err := pool.QueryRow(ctx, `
			WITH v(a) AS (SELECT $1::text[]),
			     r AS (SELECT civic_lower_array(a) AS got,
			                  (SELECT coalesce(array_agg(lower(x)), '{}') FROM unnest(a) AS x) AS want FROM v)
			SELECT got IS NOT DISTINCT FROM want, true FROM r`, c).Scan(&same, &stored)
		if err != nil {
			t.Fatalf("%v: %v", show(c), err)
		}
		if !same {
			t.Errorf("%v: civic_lower_array differs from the reference", show(c))
		}
		if c == nil {
			continue // issue_areas is NOT NULL
		}
		// The stored column of a lobbying row with these issue areas.
		id := "lower-array-" + strconv.Itoa(i)
		if err := pool.QueryRow(ctx, `
			INSERT INTO lobbying_disclosures (id, issue_areas, filing_year, filing_type, filing_period, registrant_id,
			    registrant_name, client_id, client_name)
			VALUES ($1, $2, 2024, 'RR', 'Q1', 'r', 'Registrant', 'c', 'Client')
			RETURNING issue_areas_lower IS NOT DISTINCT FROM (SELECT coalesce(array_agg(lower(x)), '{}') FROM unnest($2::text[]) AS x)`,
			id, c).Scan(&stored); err != nil {
			t.Fatalf("%v: inserting a lobbying row: %v", show(c), err)
		}
		if !stored {
			t.Errorf("%v: issue_areas_lower differs from the reference", show(c))
		}
	}
}

func ptr(s string) *string { return &s }

func show(c []*string) []string {
	out := make([]string, len(c))
	for i, s := range c {
		if s == nil {
			out[i] = "<NULL>"
		} else {
			out[i] = *s
		}
	}
	return out
}
