package gqlcache

import (
	"testing"
)

func TestTagList(t *testing.T) {
	var got []string
	for tag := range (tagList{csv: "bills, ,members,"}).each {
		got = append(got, tag)
	}
	if len(got) != 2 || got[0] != "bills" || got[1] != "members" {
		t.Fatal(got)
	}
}
