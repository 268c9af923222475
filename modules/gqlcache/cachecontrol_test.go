package gqlcache

import "testing"

func TestParseCacheControl(t *testing.T) {
	cc := parseCacheControl([]string{`public, max-age=30`, `s-maxage="10", private`})
	if cc.maxAge != 30 || cc.sMaxAge != 10 || !cc.private || cc.noStore {
		t.Fatalf("%+v", cc)
	}
	if cc := parseCacheControl([]string{"no-store, max-age=x"}); !cc.noStore || cc.maxAge != 0 || cc.sMaxAge != -1 {
		t.Fatalf("%+v", cc)
	}
}
