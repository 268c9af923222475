package usagechart

import (
	"bytes"
	"encoding/csv"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

func luminance(hex string) float64 {
	v, _ := strconv.ParseUint(hex[1:], 16, 32)
	ch := func(c uint64) float64 {
		s := float64(c) / 255
		if s <= 0.03928 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*ch(v>>16) + 0.7152*ch(v>>8&0xff) + 0.0722*ch(v&0xff)
}

func TestColourContrast(t *testing.T) {
	for _, c := range []string{colOK, colErrors, colRefused, colCost, colText, colAxis} {
		if r := 1.05 / (luminance(c) + 0.05); r < 3 {
			t.Errorf("%s has contrast %.2f:1 against white", c, r)
		}
	}
}

func TestFormatting(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1234: "1 234", 1234567: "1 234 567", -1234: "-1 234", 1e12: "1 000 000 000 000"} {
		if got := grouped(n); got != want {
			t.Errorf("grouped(%d) = %q", n, got)
		}
	}
	for _, c := range []struct{ hi, step, top float64 }{{0, 1, 1}, {1, 1, 1}, {7, 2, 8}, {1234, 500, 1500}, {1e12, 5e11, 1e12}, {math.Inf(1), 1, 1}, {math.NaN(), 1, 1}} {
		if s, top := niceScale(c.hi, 4); s != c.step || top != c.top {
			t.Errorf("niceScale(%v) = %v, %v", c.hi, s, top)
		}
	}
	for v, want := range map[float64]string{0: "0", 950: "950", 1500: "1.5k", 2e7: "20M", 3e9: "3B", 1e12: "1T"} {
		if got := compact(v); got != want {
			t.Errorf("compact(%v) = %q", v, got)
		}
	}
	var w buf
	for _, v := range []float64{math.NaN(), math.Inf(-1), -0.04, 1.25, 12.3456} {
		w.f(v)
		w.s(" ")
	}
	if string(w.b) != "0 0 0 1.3 12.3 " {
		t.Errorf("coordinates %q", w.b)
	}
}

func TestCSV(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	rows := []usage.Row{
		row("key_1", time.Date(2026, 11, 23, 16, 0, 0, 0, paris), 12, 1, 2, 3, 40),
		row("=cmd|' /C calc'!A0", t0.Add(15*time.Hour), 1, 0, 0, 0, 1),
		row("+1", t0.Add(16*time.Hour), 2, 0, 0, 0, 2),
		row("-2+3", t0.Add(16*time.Hour), 3, 0, 0, 0, 3),
		row("@SUM(A1)", t0.Add(16*time.Hour), 4, 0, 0, 0, 4),
		row("\tx", t0.Add(16*time.Hour), 5, 0, 0, 0, 5),
		row("\rx", t0.Add(16*time.Hour), 6, 0, 0, 0, 6),
		row("a,\"b\"", t0.Add(17*time.Hour), 7, 0, 0, 0, 7),
	}
	var b bytes.Buffer
	if err := CSV(&b, rows, true); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(recs[0], ",") != "start,key_id,admitted,refused,client_errors,server_errors,cost" {
		t.Errorf("header %v", recs[0])
	}
	if got := strings.Join(recs[1], ","); got != "2026-11-23T15:00:00Z,key_1,12,1,2,3,40" {
		t.Errorf("first line %q", got)
	}
	wantKeys := []string{"key_1", "'=cmd|' /C calc'!A0", "'+1", "'-2+3", "'@SUM(A1)", "'\tx", "'\rx", `a,"b"`}
	if len(recs) != len(rows)+1 {
		t.Fatalf("%d lines", len(recs))
	}
	for i, want := range wantKeys {
		if recs[i+1][1] != want {
			t.Errorf("line %d key %q, want %q", i+1, recs[i+1][1], want)
		}
	}

	b.Reset()
	if err := CSV(&b, rows, false); err != nil {
		t.Fatal(err)
	}
	want := "start,key_id,admitted,refused,client_errors,server_errors,cost\n" +
		"2026-11-23T15:00:00Z,,13,1,2,3,41\n" +
		"2026-11-23T16:00:00Z,,20,0,0,0,20\n" +
		"2026-11-23T17:00:00Z,,7,0,0,0,7\n"
	if b.String() != want {
		t.Errorf("summed CSV\n%s\nwant\n%s", b.String(), want)
	}
}
