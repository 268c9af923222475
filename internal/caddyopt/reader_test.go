package caddyopt

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// sample has one option of every kind.
type sample struct {
	S       string
	Checked string
	Rate    string
	List    []string
	N       int
	N64     int64
	Ranged  int
	F       *float64
	Size    int64
	Dur     caddy.Duration
	Bounded caddy.Duration
	Switch  *bool
	Flag    bool
	Enum    string
	Custom  [2]string
	Each    []string
	Named   map[string][]string
}

func (s *sample) read(input string) error {
	d := caddyfile.NewTestDispenser(input)
	return Read(d, "sample", Block{
		"s": String(&s.S),
		"checked": Checked(&s.Checked, func(v string) error {
			return map[bool]error{true: errors.New("must start with /")}[!strings.HasPrefix(v, "/")]
		}),
		"rate":    Rate(&s.Rate, func(v string) error { return map[bool]error{true: errors.New("not like 1/s")}[v != "1/s"] }),
		"list":    Strings(&s.List),
		"n":       Positive(&s.N),
		"n64":     Positive(&s.N64),
		"ranged":  Int(&s.Ranged, -2, 5),
		"f":       Float(&s.F, 0, 0.05),
		"size":    Size(&s.Size, 1, 1<<20),
		"dur":     PositiveDuration(&s.Dur),
		"bounded": DurationIn(&s.Bounded, 0, 50*time.Millisecond),
		"switch":  OnOff(&s.Switch),
		"flag":    Flag(&s.Flag),
		"enum":    OneOf(&s.Enum, "a", "b", "c"),
		"custom": Func(func(a *Args) error {
			x, y, err := a.Two()
			s.Custom = [2]string{x, y}
			return err
		}),
		"each": Each(func(a *Args) error {
			v, err := a.One()
			s.Each = append(s.Each, v)
			return err
		}),
		"named": EachNamed(1, func(a *Args) error {
			if s.Named == nil {
				s.Named = map[string][]string{}
			}
			s.Named[a.Name()] = a.Rest()
			return nil
		}),
	})
}

func TestReadValues(t *testing.T) {
	var s sample
	err := s.read(`sample {
		s {env.X}
		checked /v1
		rate {civic.rate}
		list a b c
		n 3
		n64 9000000000
		ranged -2
		f 0
		size 64KiB
		dur 1d
		bounded 0s
		switch off
		flag
		enum c
		custom x y
		each 1
		each 2
		named free 30/m bills
		named paid 60/m
	}`)
	if err != nil {
		t.Fatal(err)
	}
	zero, off := 0.0, false
	want := sample{S: "{env.X}", Checked: "/v1", Rate: "{civic.rate}", List: []string{"a", "b", "c"}, N: 3, N64: 9000000000, Ranged: -2,
		F: &zero, Size: 64 << 10, Dur: caddy.Duration(24 * time.Hour), Switch: &off, Flag: true, Enum: "c",
		Custom: [2]string{"x", "y"}, Each: []string{"1", "2"}, Named: map[string][]string{"free": {"30/m", "bills"}, "paid": {"60/m"}}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got  %+v\nwant %+v", s, want)
	}
	for _, bare := range []string{"sample", "sample {\n}"} {
		if err := new(sample).read(bare); err != nil {
			t.Fatalf("%q: %v", bare, err)
		}
	}
}

func TestReadRefusals(t *testing.T) {
	for in, msg := range map[string]string{
		"sample extra":                        "wrong argument count or unexpected line ending after 'extra'",
		"sample {\nnope 1\n}":                 `sample: unknown option "nope"`,
		"sample {\ns a\ns b\n}":               "sample: s given twice, at Testfile:3",
		"sample {\nflag\nflag\n}":             "sample: flag given twice",
		"sample {\ncustom a b\ncustom a b\n}": "sample: custom given twice",
		"sample {\nnamed x 1\nnamed x 2\n}":   "sample: named x given twice, at Testfile:3",
		"sample {\nnamed x\n}":                "wrong argument count",
		"sample {\ns\n}":                      "wrong argument count or unexpected line ending after 's'",
		"sample {\ns a b\n}":                  "wrong argument count or unexpected line ending after 'b'",
		"sample {\nlist\n}":                   "wrong argument count",
		"sample {\nflag on\n}":                "wrong argument count",
		"sample {\ns a {\nx\n}\n}":            "sample: s takes no block",
		"sample {\nflag {\nx\n}\n}":           "sample: flag takes no block",
		"sample {\nchecked v1\n}":             "sample: checked: must start with /, at Testfile:2",
		"sample {\nrate 2/s\n}":               "sample: rate: not like 1/s",
		"sample {\nn 0\n}":                    `sample: n: want a positive integer, got "0"`,
		"sample {\nn64 lots\n}":               `sample: n64: want a positive integer, got "lots"`,
		"sample {\nn 99999999999999999999\n}": `sample: n: want a positive integer, got "99999999999999999999"`,
		"sample {\nranged 6\n}":               `sample: ranged: want an integer from -2 to 5, got "6"`,
		"sample {\nf 0.06\n}":                 `sample: f: want a number from 0 to 0.05, got "0.06"`,
		"sample {\nf NaN\n}":                  `sample: f: want a number from 0 to 0.05, got "NaN"`,
		"sample {\nsize 0\n}":                 `sample: size: want a size from 1 B to 1.0 MiB (e.g. 128KiB), got "0"`,
		"sample {\nsize 2MiB\n}":              `sample: size: want a size from 1 B to 1.0 MiB (e.g. 128KiB), got "2MiB"`,
		"sample {\ndur 0s\n}":                 `sample: dur: want a duration above zero, got "0s"`,
		"sample {\ndur soon\n}":               `sample: dur: want a duration above zero, got "soon"`,
		"sample {\nbounded 51ms\n}":           `sample: bounded: want a duration from 0s to 50ms, got "51ms"`,
		"sample {\nbounded -1ms\n}":           `sample: bounded: want a duration from 0s to 50ms, got "-1ms"`,
		"sample {\nswitch maybe\n}":           `sample: switch: want on or off, got "maybe"`,
		"sample {\nenum d\n}":                 `sample: enum: want a, b or c, got "d"`,
	} {
		err := new(sample).read(in)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want one containing %q", in, err, msg)
		}
	}
}

func TestDurationInUnbounded(t *testing.T) {
	var d caddy.Duration
	err := Read(caddyfile.NewTestDispenser("x {\nd -1s\n}"), "x", Block{"d": DurationIn(&d, 0, Forever)})
	if want := `x: d: want a duration of at least 0s, got "-1s"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
}

func TestMaxOf(t *testing.T) {
	if maxOf[int64]() != 1<<63-1 || maxOf[int]() != 1<<(strconv.IntSize-1)-1 {
		t.Fatal(maxOf[int64](), maxOf[int]())
	}
}
