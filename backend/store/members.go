package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/civicgate/civicgate/backend/records"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var membersKeyset = keyset{family: "members", cols: "(m.name, m.member_id)", casts: []string{"text", "text"}, op: ">"}

// membersTermsKeyset is the same order (and cursor) read from member_terms' copy of the name, which triggers
// keep equal to members.name (migration 0105).
var membersTermsKeyset = keyset{family: "members", cols: "(t.name, t.member_id)", casts: []string{"text", "text"}, op: ">"}

type membersFilter struct {
	State    *string `json:"s,omitempty"`
	Chamber  *string `json:"ch,omitempty"`
	Congress *int    `json:"c,omitempty"`
}

// Members returns one page of members ordered by name, then member_id. congress and chamber together
// must match one term.
func (s *Store) Members(ctx context.Context, in records.MembersInput) (records.MembersPage, error) {
	sql, args, limit, binding, err := s.membersQuery(in)
	if err != nil {
		return records.MembersPage{}, err
	}
	var page records.MembersPage
	err = s.read(ctx, func(db *pgxpool.Pool) error { // the page and its terms from one server
		rows, err := db.Query(ctx, sql, args...)
		if err != nil {
			return fmt.Errorf("store: members query: %w", err)
		}
		page, err = collect(s, rows, limit, binding, func(r pgx.Rows) (records.Member, []string, error) {
			var m records.Member
			if err := r.Scan(&m.MemberID, &m.BioguideID, &m.Name, &m.State); err != nil {
				return m, nil, fmt.Errorf("store: scan member: %w", err)
			}
			m.Terms = []records.MemberTerm{}
			return m, []string{m.Name, m.MemberID}, nil
		})
		if err != nil || len(page.Items) == 0 {
			return err
		}
		return loadTerms(ctx, db, page.Items)
	})
	return page, err
}

// membersQuery validates in and builds the full-row page query.
func (s *Store) membersQuery(in records.MembersInput) (sql string, args []any, limit int, binding string, err error) {
	q, limit, binding, err := s.membersConditions(in)
	if err != nil {
		return "", nil, 0, "", err
	}
	sql = q.pageSQL("m.member_id, m.bioguide_id, m.name, m.state", limit) // before reading args: it adds the LIMIT
	return sql, q.args.params(), limit, binding, nil
}

// membersPage is a members page's conditions, keyset predicate and order: the one filter implementation both
// the full-row read (Members) and the projected read (PrepareMembers) use.
type membersPage struct {
	args        *query
	from, order string
}

// pageSQL is the page query selecting columns under the page's conditions; it adds the LIMIT argument.
func (p membersPage) pageSQL(columns string, limit int) string {
	return "SELECT " + columns + p.from + p.args.whereSQL() + " ORDER BY " + p.order + " LIMIT " + limitSQL(limit)
}

// membersConditions validates in and builds the filters and keyset predicate of a members page.
func (s *Store) membersConditions(in records.MembersInput) (p membersPage, limit int, binding string, err error) {
	if err := records.ValidateText(in); err != nil {
		return membersPage{}, 0, "", err
	}
	if err := records.ValidateMembers(in); err != nil {
		return membersPage{}, 0, "", err
	}
	// Codes are compared without regard to case (docs/design.md D4): fold them to their stored case first, so
	// "wa" and "WA" are one filter and share cursors.
	if in.State != nil {
		st := strings.ToUpper(*in.State) // stored as upper-case postal codes
		in.State = &st
	}
	if in.Chamber != nil {
		ch := strings.ToLower(*in.Chamber) // stored lowercase: "Senate" is senate
		in.Chamber = &ch
	}
	binding = bindingOf(membersKeyset.family, membersFilter{State: in.State, Chamber: in.Chamber, Congress: in.Congress})
	q := &query{where: []string{"m.deleted_at IS NULL"}}
	if in.State != nil {
		q.cond("m.state = %s", *in.State)
	}
	from, order, ks := " FROM members m", "m.name, m.member_id", membersKeyset
	if in.Congress != nil {
		// The Congress's terms carry the member's name (migration 0105): walk them in (name, member_id) order,
		// one row per member, and join the member. The keyset predicate on t is pushed into the DISTINCT.
		terms := "t.congress = " + q.arg(*in.Congress)
		if in.Chamber != nil {
			terms += " AND t.chamber = " + q.arg(*in.Chamber) // one term matching both
		}
		from = " FROM (SELECT DISTINCT t.name, t.member_id FROM member_terms t WHERE " + terms + ") t" +
			" JOIN members m ON m.member_id = t.member_id"
		order, ks = "t.name, t.member_id", membersTermsKeyset
	} else if in.Chamber != nil {
		q.cond("EXISTS (SELECT 1 FROM member_terms t WHERE t.member_id = m.member_id AND t.chamber = %s)", *in.Chamber)
	}
	limit, err = s.page(q, ks, binding, records.Paging{Cursor: in.Cursor, Limit: in.Limit})
	if err != nil {
		return membersPage{}, 0, "", err
	}
	return membersPage{args: q, from: from, order: order}, limit, binding, nil
}

// loadTerms fills the terms of members with one query on db.
func loadTerms(ctx context.Context, db *pgxpool.Pool, members []records.Member) error {
	ids := make([]string, len(members))
	index := make(map[string]int, len(members))
	for i, m := range members {
		ids[i] = m.MemberID
		index[m.MemberID] = i
	}
	rows, err := db.Query(ctx, `SELECT member_id, congress, chamber, party FROM member_terms
		WHERE member_id = ANY($1) ORDER BY member_id, congress, chamber, seq`, ids)
	if err != nil {
		return fmt.Errorf("store: member terms query: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var t records.MemberTerm
		if err := rows.Scan(&id, &t.Congress, &t.Chamber, &t.Party); err != nil {
			return fmt.Errorf("store: scan member term: %w", err)
		}
		i := index[id]
		members[i].Terms = append(members[i].Terms, t)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: read member terms: %w", err)
	}
	return nil
}
