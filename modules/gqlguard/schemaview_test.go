package gqlguard

import "testing"

// TestCheckSchemaView: full or entitled, and entitled only with a family to
// cut the schema by.
func TestCheckSchemaView(t *testing.T) {
	for _, c := range []struct {
		mode     string
		families int
		ok       bool
	}{
		{"", 0, true}, {"full", 0, true}, {"entitled", 2, true},
		{"entitled", 0, false}, {"tier", 2, false},
	} {
		if err := checkSchemaView(c.mode, c.families); (err == nil) != c.ok {
			t.Errorf("schema_view %q with %d families: %v", c.mode, c.families, err)
		}
	}
}
