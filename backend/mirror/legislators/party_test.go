package legislators_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/backend/cursor"
	"github.com/civicgate/civicgate/backend/migrations/migratedtest"
	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/records"
	"github.com/civicgate/civicgate/backend/store"
)

// testNow is the clock of every test: the 119th Congress is in session.
var testNow = time.Date(2026, time.November, 24, 12, 0, 0, 0, time.UTC)

// TestPartySwitchIsTwoTermsAndNoFutureCongress: a switch recorded in party_affiliations gives the Congress
// one term per party held in it, in order (the 116th: Republican, then Independent), and a Senate term is
// expanded only up to the Congress in session (119), not into the 120th and 121st.
func TestPartySwitchIsTwoTermsAndNoFutureCongress(t *testing.T) {
	ctx := context.Background()
	pool := migratedtest.Pool(t)
	st, err := importFile(t, pool, "testdata/party_switch.yaml", mirror.Options{})
	if err != nil || st.Created != 2 || st.Malformed != 0 {
		t.Fatalf("%+v %v", st, err)
	}
	codec, err := cursor.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(pool, codec)
	page, err := s.Members(ctx, records.MembersInput{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range page.Items {
		for _, term := range m.Terms {
			got = append(got, m.MemberID+" "+strconv.Itoa(term.Congress)+" "+term.Chamber+" "+deref(term.Party))
		}
	}
	want := []string{
		"Z000010 115 house Republican",
		"Z000010 116 house Republican",
		"Z000010 116 house Independent",
		"Z000011 119 senate Democrat",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// members(congress: 120) has nobody: that Congress has not met.
	c := 120
	if p, err := s.Members(ctx, records.MembersInput{Congress: &c}); err != nil || len(p.Items) != 0 {
		t.Fatalf("congress 120: %+v %v", p.Items, err)
	}
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}
