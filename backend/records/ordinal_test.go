package records

import "testing"

func TestOrdinal(t *testing.T) {
	for n, want := range map[int]string{
		1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 100: "100th",
		101: "101st", 111: "111th", 112: "112th", 113: "113th", 117: "117th", 118: "118th", 122: "122nd", 123: "123rd",
	} {
		if got := Ordinal(n); got != want {
			t.Errorf("Ordinal(%d) = %q, want %q", n, got, want)
		}
	}
}
