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
	} `yaml:"terms"`
}

// Parse reads the whole YAML document; every legislator becomes an Item positioned by its line.
// A document that is not a YAML sequence is an error for the whole file.
func Parse(r io.Reader) ([]mirror.Item, error) {
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
		m, err := normalize(&l)
		if err != nil {
			items = append(items, mirror.Item{Pos: pos, Err: err})
			continue
		}
		items = append(items, mirror.Item{Pos: pos, Rec: m})
	}
	return items, nil
}

func normalize(l *legislator) (*mirror.Member, error) {
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
	m := &mirror.Member{MemberID: id, BioguideID: id, Name: name, Terms: []mirror.MemberTerm{}}
	index := map[string]int{} // congress+chamber → position in m.Terms (a later term wins)
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
		start, err := time.Parse(time.DateOnly, t.Start)
		if err != nil {
			return nil, fmt.Errorf("terms[%d].start: %w", j, err)
		}
		end, err := time.Parse(time.DateOnly, t.End)
		if err != nil {
			return nil, fmt.Errorf("terms[%d].end: %w", j, err)
		}
		if !end.After(start) {
			return nil, fmt.Errorf("terms[%d]: end %s is not after start %s", j, t.End, t.Start)
		}
		state := optional(t.State)
		party := optional(t.Party)
		var district *int
		if chamber == "house" && t.District != nil {
			d := *t.District
			district = &d
		}
		for c := CongressOn(start); c <= CongressOn(end.AddDate(0, 0, -1)); c++ {
			term := mirror.MemberTerm{Congress: c, Chamber: chamber, Party: party, State: state, District: district}
			key := fmt.Sprintf("%d/%s", c, chamber)
			if k, ok := index[key]; ok {
				m.Terms[k] = term
				continue
			}
			index[key] = len(m.Terms)
			m.Terms = append(m.Terms, term)
		}
		if !start.Before(latest) {
			latest = start
			m.State = state
		}
	}
	return m, nil
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
