package records

import "testing"

func TestNormalizeSearch(t *testing.T) {
	for in, want := range map[string]string{
		"H.R. 2882":                "hr2882",
		"HR 2882":                  "hr2882",
		"hr2882":                   "hr2882",
		"S. 12 climate":            "s12 climate",
		"H.J.Res. 7":               "hjres7",
		"H. Con. Res. 3":           "hconres3",
		"clean water act":          "clean water act",
		"veterans H.Res.101":       "veterans hres101",
		"S. 12 and H. Con. Res. 3": "s12 and hconres3",
		// fuzzing found it: (?i) matches "ſ" as "s", and re-matching the
		// found text alone failed (an index out of range)
		"000ſ0": "0000",
	} {
		if got := NormalizeSearch(in); got != want {
			t.Errorf("NormalizeSearch(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLimit(t *testing.T) {
	for _, tc := range []struct {
		in   *int
		want int
		ok   bool
	}{{nil, 25, true}, {ptr(1), 1, true}, {ptr(100), 100, true}, {ptr(0), 0, false}, {ptr(101), 0, false}, {ptr(-5), 0, false}} {
		got, err := Limit(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("Limit(%v) = %d, %v", tc.in, got, err)
		}
	}
}

func TestValidateBudgets(t *testing.T) {
	bad := []FederalBudgetsInput{
		{Dataset: DatasetOutlays, BureauCode: ptr("05")},
		{Dataset: DatasetAppropriations, Month: ptr("2025-01")},
		{Dataset: DatasetOutlays, Month: ptr("2025-13")},
		{Dataset: DatasetOutlays, Month: ptr("2025-1")},
		{Dataset: "OTHER"},
	}
	for _, in := range bad {
		if err := ValidateBudgets(in); err == nil {
			t.Errorf("ValidateBudgets(%+v) accepted", in)
		}
	}
	good := []FederalBudgetsInput{{Dataset: DatasetOutlays, Month: ptr("2025-01")}, {Dataset: DatasetAppropriations, BureauCode: ptr("05")}}
	for _, in := range good {
		if err := ValidateBudgets(in); err != nil {
			t.Errorf("ValidateBudgets(%+v) = %v", in, err)
		}
	}
	// One case rule for every string filter (docs/design.md D4): "House" is house; "senat" is no chamber.
	if ValidateMembers(MembersInput{Chamber: ptr("House")}) != nil || ValidateMembers(MembersInput{Chamber: ptr("senate")}) != nil ||
		ValidateMembers(MembersInput{Chamber: ptr("senat")}) == nil {
		t.Error("ValidateMembers chamber check wrong")
	}
	if ValidateBudgets(FederalBudgetsInput{Dataset: DatasetOutlays, Edition: ptr(2016)}) == nil ||
		ValidateBudgets(FederalBudgetsInput{Dataset: DatasetAppropriations, Edition: ptr(2016)}) != nil {
		t.Error("ValidateBudgets edition check wrong")
	}
}

func ptr[T any](v T) *T { return &v }

func TestValidateText(t *testing.T) {
	if err := ValidateText(BillsInput{Q: ptr("ok text")}); err != nil {
		t.Fatal(err)
	}
	for _, in := range []any{BillsInput{Q: ptr("a\x00b")}, BillsInput{Type: ptr("\xff")}, LobbyingDisclosuresInput{ClientName: ptr(string(make([]byte, MaxTextLen+1)))}, FederalBudgetsInput{Dataset: "\x00"}} {
		err := ValidateText(in)
		if ie, ok := err.(*InputError); !ok || ie.Field == "" {
			t.Errorf("ValidateText(%+v) = %v", in, err)
		}
	}
}
