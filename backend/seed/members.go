package seed

import (
	"fmt"
	"sort"
)

// First and last Congress of the generated roster; bills cover the same range.
const (
	firstCongress = 93
	lastCongress  = 119
)

type member struct {
	id    string // bioguide
	first string
	mid   string
	last  string
	state string // state of the latest term
	terms []term
}

type term struct {
	congress int
	chamber  string // house | senate
	party    string
	state    string
	district *int // house only; 0 = at-large
}

// name is the Congress.gov directory form "Last, First M.".
func (m *member) name() string {
	if m.mid == "" {
		return m.last + ", " + m.first
	}
	return m.last + ", " + m.first + " " + m.mid
}

// sponsorName is the Congress.gov sponsor fullName, e.g. "Rep. Connolly, Gerald E. [D-VA-11]".
func (m *member) sponsorName(t term) string {
	p := t.party[:1]
	if t.chamber == "senate" {
		return fmt.Sprintf("Sen. %s [%s-%s]", m.name(), p, t.state)
	}
	title := "Rep."
	switch {
	case t.state == "PR":
		title = "Resident Commissioner"
	case isTerritory(t.state):
		title = "Del."
	}
	d := "At Large"
	if t.district != nil && *t.district > 0 {
		d = fmt.Sprint(*t.district)
	}
	return fmt.Sprintf("%s %s [%s-%s-%s]", title, m.name(), p, t.state, d)
}

func isTerritory(s string) bool {
	for _, t := range territories {
		if t == s {
			return true
		}
	}
	return false
}

// roster is the generated membership: every member, and who served in each Congress and chamber.
type roster struct {
	members []*member
	serving map[int]map[string][]sponsor // congress → chamber → members serving
}

type sponsor struct {
	m *member
	t term
}

type idAllocator struct{ next map[byte]int }

func (a *idAllocator) id(last string) string {
	letter := last[0]
	if letter < 'A' || letter > 'Z' {
		letter = 'X'
	}
	if a.next == nil {
		a.next = map[byte]int{}
	}
	a.next[letter]++
	return fmt.Sprintf("%c%06d", letter, a.next[letter]*3+1)
}

type seat struct {
	state    string
	district int
	chamber  string
	holder   *member
	party    string
	left     int // congresses remaining for the holder
	lean     float64
}

func newPerson(r rng, ids *idAllocator) *member {
	m := &member{first: pick(r, firstNames), mid: pick(r, middleInitials), last: pick(r, lastNames)}
	m.id = ids.id(m.last)
	return m
}

func partyFor(r rng, lean float64) string {
	x := r.Float64()
	switch {
	case x < 0.015:
		return "Independent"
	case x < lean:
		return "Democrat"
	default:
		return "Republican"
	}
}

// buildRoster simulates seat occupancy for Congresses 93–119: every House seat (with non-voting delegates)
// and two Senate seats per state, careers of varying length, House members moving to the Senate and
// occasional party switches. extra adds synthetic historical members (Congresses 1–92) to reach a target size.
func buildRoster(seed uint64, extra int) *roster {
	r := newRNG(seed, 1)
	ids := &idAllocator{}
	ro := &roster{serving: map[int]map[string][]sponsor{}}
	var seats []*seat
	for _, s := range states {
		lean := 0.25 + 0.5*r.Float64()
		for d := 1; d <= s.seats; d++ {
			dist := d
			if s.seats == 1 {
				dist = 0
			}
			seats = append(seats, &seat{state: s.code, district: dist, chamber: "house", lean: lean})
		}
		for c := 0; c < 2; c++ {
			// stagger Senate classes: the first holder's remaining term is 1..3 Congresses
			seats = append(seats, &seat{state: s.code, chamber: "senate", lean: lean, left: 0})
		}
	}
	for _, t := range territories {
		seats = append(seats, &seat{state: t, district: 0, chamber: "house", lean: 0.6})
	}
	for c := firstCongress; c <= lastCongress; c++ {
		ro.serving[c] = map[string][]sponsor{}
		// Senate seats first so a House member who moves up vacates the House seat this Congress.
		for _, s := range seats {
			if s.chamber != "senate" || s.left > 0 {
				continue
			}
			var m *member
			if r.chance(0.35) {
				for _, h := range seats {
					if h.chamber == "house" && h.state == s.state && h.holder != nil && h.left > 0 && r.chance(0.5) {
						m, s.party = h.holder, h.party
						h.left = 0
						break
					}
				}
			}
			if m == nil {
				m = newPerson(r, ids)
				ro.members = append(ro.members, m)
				s.party = partyFor(r, s.lean)
			}
			s.holder = m
			s.left = 3 * (1 + r.IntN(3))
			if c == firstCongress {
				s.left = 1 + r.IntN(3) + 3*r.IntN(2)
			}
		}
		for _, s := range seats {
			if s.chamber != "house" || s.left > 0 {
				continue
			}
			s.holder = newPerson(r, ids)
			ro.members = append(ro.members, s.holder)
			s.party = partyFor(r, s.lean)
			s.left = 1 + r.IntN(3) + r.IntN(4)*r.IntN(3)
		}
		for _, s := range seats {
			if r.chance(0.003) && s.party != "Independent" { // party switch, kept for the rest of the career
				if s.party == "Democrat" {
					s.party = "Republican"
				} else {
					s.party = "Democrat"
				}
			}
			t := term{congress: c, chamber: s.chamber, party: s.party, state: s.state}
			if s.chamber == "house" {
				d := s.district
				t.district = &d
			}
			s.holder.terms = append(s.holder.terms, t)
			s.holder.state = s.state
			ro.serving[c][s.chamber] = append(ro.serving[c][s.chamber], sponsor{m: s.holder, t: t})
			s.left--
		}
	}
	// Synthetic historical members, only to size the members family for benchmarks.
	for i := 0; i < extra; i++ {
		m := newPerson(r, ids)
		st := pick(r, states).code
		chamber := "house"
		if r.chance(0.2) {
			chamber = "senate"
		}
		start := 1 + r.IntN(92)
		n := 1 + r.IntN(5)
		if chamber == "senate" {
			n = 3 * (1 + r.IntN(2))
		}
		party := pick(r, []string{"Democrat", "Republican", "Whig", "Federalist", "Democratic-Republican", "Independent"})
		for c := start; c < start+n && c < firstCongress; c++ {
			t := term{congress: c, chamber: chamber, party: party, state: st}
			if chamber == "house" {
				d := 1 + r.IntN(10)
				t.district = &d
			}
			m.terms = append(m.terms, t)
		}
		m.state = st
		ro.members = append(ro.members, m)
	}
	sort.Slice(ro.members, func(i, j int) bool { return ro.members[i].id < ro.members[j].id })
	return ro
}
