package mirror

import (
	"encoding/json"
	"testing"
)

// TestMemberRecordJSON pins a member's record as change events carry it and snapshots compare it: the API's
// member fields (records.Member) with each term's state and district beside its congress, chamber and party, in
// this order. A change here changes every member event and makes the next sync rewrite every member.
func TestMemberRecordJSON(t *testing.T) {
	state, party, district := "VA", "Democrat", 8
	m := &Member{}
	m.MemberID, m.BioguideID, m.Name, m.State = "B000001", "B000001", "Ada Beyer", &state
	var house, senate MemberTerm // field by field: whichever struct declares a field, the record is the same
	house.Congress, house.Chamber, house.Party, house.State, house.District = 118, "house", &party, &state, &district
	senate.Congress, senate.Chamber, senate.State = 119, "senate", &state
	m.Terms = []MemberTerm{house, senate}
	got, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"member_id":"B000001","bioguide_id":"B000001","name":"Ada Beyer","state":"VA","terms":[` +
		`{"congress":118,"chamber":"house","party":"Democrat","state":"VA","district":8},` +
		`{"congress":119,"chamber":"senate","party":null,"state":"VA","district":null}]}`
	if string(got) != want {
		t.Errorf("member record\n got %s\nwant %s", got, want)
	}
	if m.RecordID() != "B000001" {
		t.Errorf("RecordID %q", m.RecordID())
	}
}
