package store

import "testing"

// TestActivitiesDecodeRemembersOnlySuccesses: a decodable value is remembered and answered from memory; a
// value that does not decode is refused every time, also after a decodable one was remembered, and another
// value is never answered from a remembered one.
func TestActivitiesDecodeRemembersOnlySuccesses(t *testing.T) {
	good := []byte(`[{"issue_area":"HCR","lobbyists":[{"name":"A. Person","is_new":true}]}]`)
	bad := []byte(`[{"issue_area":"HCR","lobbyists":[{"name":"A. Person","is_new":"yes"}]}]`)
	folded := []byte(`[{"ISSUE_AREA":7}]`) // encoding/json matches keys case-insensitively: a type error
	if !activitiesDecode(good) {
		t.Fatal("decodable activities refused")
	}
	if !decodableActivities.has(decodableActivities.key(good)) {
		t.Fatal("decodable activities not remembered")
	}
	for range 2 {
		if activitiesDecode(bad) || activitiesDecode(folded) {
			t.Fatal("activities encoding/json refuses were accepted")
		}
	}
	if decodableActivities.has(decodableActivities.key(bad)) {
		t.Fatal("a refused value was remembered")
	}
	if n := testing.AllocsPerRun(100, func() { activitiesDecode(good) }); n != 0 {
		t.Errorf("a remembered value still costs %v allocations", n)
	}
}
