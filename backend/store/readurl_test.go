package store

import (
	"reflect"
	"testing"
)

func TestSplitReadURLs(t *testing.T) {
	for in, want := range map[string][]string{
		"":                                    nil,
		" , ":                                 nil,
		"postgres://u@a/db":                   {"postgres://u@a/db"},
		"postgres://u@a/db,postgres://u@b/db": {"postgres://u@a/db", "postgres://u@b/db"},
		"postgres://u@a/db , \n postgresql://u@b/db,": {"postgres://u@a/db", "postgresql://u@b/db"},
		"postgres://u@a:5432,b:5432/db?target_session_attrs=any,postgres://u@c/db": {
			"postgres://u@a:5432,b:5432/db?target_session_attrs=any", "postgres://u@c/db"},
		"host=a,b port=5432 dbname=x":               {"host=a,b port=5432 dbname=x"},
		"postgres://u:p%2Cq@a/db,POSTGRES://u@b/db": {"postgres://u:p%2Cq@a/db", "POSTGRES://u@b/db"},
		",postgres://u@a/db":                        {"postgres://u@a/db"},
	} {
		if got := SplitReadURLs(in); !reflect.DeepEqual(got, want) {
			t.Errorf("SplitReadURLs(%q) = %q, want %q", in, got, want)
		}
	}
}
