// Package legislators imports members from the unitedstates/congress-legislators YAML
// (legislators-current.yaml layout): terms are expanded into one row per Congress they overlap,
// chambers rep→house, sen→senate, name from name.official_full (or first + last).
package legislators

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/records"
	"gopkg.in/yaml.v3"
)

// SourceName identifies this source in sync_state and snapshots.
const SourceName = "legislators"

type legislator struct {
	ID struct {
		Bioguide string `yaml:"bioguide"`
	} `yaml:"id"`
	Name struct {
		First        string `yaml:"first"`
		Last         string `yaml:"last"`
		OfficialFull string `yaml:"official_full"`
	} `yaml:"name"`
	Terms []struct {
		Type     string `yaml:"type"`
		Start    string `yaml:"start"`
		End      string `yaml:"end"`
		State    string `yaml:"state"`
		District *int   `yaml:"district"`
		Party    string `yaml:"party"`
		// PartyAffiliations is set when the member changed party during the term (the term's party is then
		// the last one).
		PartyAffiliations []affiliation `yaml:"party_affiliations"`
	} `yaml:"terms"`
}

type affiliation struct {
	Start string `yaml:"start"`
	End   string `yaml:"end"`
	Party string `yaml:"party"`
}

// Options set the clock: terms are expanded only up to the Congress in session at Now (a term's later
// Congresses have not met yet). Zero Now = time.Now().
type Options struct {
	Now time.Time
}

// Parse reads the whole YAML document; every legislator becomes an Item positioned by its line.
// A document that is not a YAML sequence is an error for the whole file.
func Parse(r io.Reader, opt Options) ([]mirror.Item, error) {
	if opt.Now.IsZero() {
		opt.Now = time.Now()
	}
	current := CongressOn(opt.Now)
	var doc yaml.Node
	if err := yaml.NewDecoder(r).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fmt.Errorf("legislators: parse YAML: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.SequenceNode {
		return nil, errors.New("legislators: the document is not a list of legislators")
	}
	seq := doc.Content[0].Content
	items := make([]mirror.Item, 0, len(seq))
	for i, n := range seq {
		pos := fmt.Sprintf("line %d (legislator %d)", n.Line, i)
		var l legislator
		if err := n.Decode(&l); err != nil {
			items = append(items, mirror.Item{Pos: pos, Err: err})
			continue
		}
		m, err := normalize(&l, current)
		if err != nil {
			items = append(items, mirror.Item{Pos: pos, Err: err})
			continue
		}
		items = append(items, mirror.Item{Pos: pos, Rec: m})
	}
	return items, nil
}

func normalize(l *legislator, current int) (*mirror.Member, error) {
	id := strings.TrimSpace(l.ID.Bioguide)
	if id == "" {
		return nil, errors.New("id.bioguide is missing")
	}
	name := strings.TrimSpace(l.Name.OfficialFull)
	if name == "" {
		name = strings.TrimSpace(strings.TrimSpace(l.Name.First) + " " + strings.TrimSpace(l.Name.Last))
	}
	if name == "" {
		return nil, errors.New("name is missing (neither official_full nor first/last)")
	}
	if len(l.Terms) == 0 {
		return nil, errors.New("terms are missing")
	}
	m := &mirror.Member{Member: records.Member{MemberID: id, BioguideID: id, Name: name}}
	var g groups
	var latest time.Time
	for j, t := range l.Terms {
		var chamber string
		switch t.Type {
		case "rep":
			chamber = "house"
		case "sen":
			chamber = "senate"
		default:
			return nil, fmt.Errorf("terms[%d].type %q is not rep or sen", j, t.Type)
		}
		start, end, err := span(t.Start, t.End)
		if err != nil {
			return nil, fmt.Errorf("terms[%d]: %w", j, err)
		}
		parties, err := partiesOf(t.Party, t.PartyAffiliations, start, end)
		if err != nil {
			return nil, fmt.Errorf("terms[%d]: %w", j, err)
		}
		state := optional(t.State)
		var district *int
		if chamber == "house" && t.District != nil {
			d := *t.District
			district = &d
		}
		for c := CongressOn(start); c <= min(CongressOn(end.AddDate(0, 0, -1)), current); c++ {
			from, to := congressStart(c), congressStart(c+1)
			for _, p := range parties {
				if p.start.Before(to) && p.end.After(from) { // held during Congress c
					g.add(mirror.MemberTerm{MemberTerm: records.MemberTerm{Congress: c, Chamber: chamber, Party: p.party}, State: state, District: district})
				}
			}
		}
		if !start.Before(latest) {
			latest = start
			m.State = state
		}
	}
	m.Terms = g.flatten()
	return m, nil
}

type partySpan struct {
	start, end time.Time
	party      *string
}

// partiesOf is the term's party over time: its party_affiliations when given, else its party throughout.
func partiesOf(party string, affs []affiliation, start, end time.Time) ([]partySpan, error) {
	if len(affs) == 0 {
		return []partySpan{{start: start, end: end, party: optional(party)}}, nil
	}
	out := make([]partySpan, 0, len(affs))
	for k, a := range affs {
		s, e, err := span(a.Start, a.End)
		if err != nil {
			return nil, fmt.Errorf("party_affiliations[%d]: %w", k, err)
		}
		out = append(out, partySpan{start: s, end: e, party: optional(a.Party)})
	}
	return out, nil
}

func span(startS, endS string) (time.Time, time.Time, error) {
	start, err := time.Parse(time.DateOnly, startS)
	if err != nil {
		return start, start, fmt.Errorf("start: %w", err)
	}
	end, err := time.Parse(time.DateOnly, endS)
	if err != nil {
		return start, start, fmt.Errorf("end: %w", err)
	}
	if !end.After(start) {
		return start, start, fmt.Errorf("end %s is not after start %s", endS, startS)
	}
	return start, end, nil
}

// groups keeps one list of terms per Congress and chamber, in order of first appearance: a party switch
// within a Congress appends a term of the new party; the same party again replaces the last term (the later
// term's state and district win).
type groups struct {
	keys  []string
	terms map[string][]mirror.MemberTerm
}

func (g *groups) add(t mirror.MemberTerm) {
	if g.terms == nil {
		g.terms = map[string][]mirror.MemberTerm{}
	}
	key := fmt.Sprintf("%d/%s", t.Congress, t.Chamber)
	list, ok := g.terms[key]
	if !ok {
		g.keys = append(g.keys, key)
	}
	if n := len(list); n > 0 && samePtr(list[n-1].Party, t.Party) {
		list[n-1] = t
	} else {
		list = append(list, t)
	}
	g.terms[key] = list
}

func (g *groups) flatten() []mirror.MemberTerm {
	out := []mirror.MemberTerm{}
	for _, k := range g.keys {
		out = append(out, g.terms[k]...)
	}
	return out
}

func samePtr(a, b *string) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// congressStart is Jan 3 of 1787+2N, the day Congress N first meets.
func congressStart(n int) time.Time {
	return time.Date(1787+2*n, time.January, 3, 0, 0, 0, 0, time.UTC)
}

// CongressOn returns the Congress in session on day d: Congress N runs from Jan 3 of 1787+2N to Jan 3 of
// 1789+2N, so congress(d) = floor((year−1787)/2), minus one on Jan 1–2 of an odd year.
func CongressOn(d time.Time) int {
	y := d.Year()
	c := (y - 1787) / 2
	if y%2 == 1 && d.Month() == time.January && d.Day() < 3 {
		c--
	}
	return c
}

func optional(s string) *string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	return &s
}
