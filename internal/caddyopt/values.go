package caddyopt

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/caddyserver/caddy/v2"
	"github.com/dustin/go-humanize"
)

// Once-only options: given twice, Read refuses them. Each reads exactly the
// arguments it names; a bad value is refused as "<block>: <opt>: want …, got
// "<value>"".

// String reads one argument as written (placeholders included).
func String(dst *string) Option {
	return Checked(dst, nil)
}

// Checked reads one argument that check accepts (nil: any); check's error is
// the message: "<block>: <opt>: <error>".
func Checked(dst *string, check func(string) error) Option {
	return Func(func(a *Args) error {
		v, err := a.One()
		if err != nil {
			return err
		}
		if check != nil {
			if err := check(v); err != nil {
				return a.Errf("%v", err)
			}
		}
		*dst = v
		return nil
	})
}

// Rate reads one argument that is a rate, kept as written (e.g. "100/m"):
// parse, the module's own rate parser, must accept it — unless it holds a
// placeholder ({…}), which is resolved and parsed per request.
func Rate(dst *string, parse func(string) error) Option {
	return Checked(dst, func(v string) error {
		if strings.Contains(v, "{") {
			return nil
		}
		return parse(v)
	})
}

// Strings reads one or more arguments.
func Strings(dst *[]string) Option {
	return Func(func(a *Args) error {
		args, err := a.AtLeast(1)
		if err != nil {
			return err
		}
		*dst = args
		return nil
	})
}

// Positive reads one argument as an integer ≥ 1.
func Positive[T ~int | ~int64](dst *T) Option {
	return intIn(dst, 1, maxOf[T](), "a positive integer")
}

// Int reads one argument as an integer from min to max.
func Int[T ~int | ~int64](dst *T, min, max T) Option {
	return intIn(dst, min, max, "an integer from "+strconv.FormatInt(int64(min), 10)+" to "+strconv.FormatInt(int64(max), 10))
}

func intIn[T ~int | ~int64](dst *T, min, max T, want string) Option {
	return Func(func(a *Args) error {
		v, err := a.One()
		if err != nil {
			return err
		}
		n, err := strconv.ParseInt(v, 10, int(unsafe.Sizeof(*dst))*8)
		if err != nil || T(n) < min || T(n) > max {
			return a.Errf("want %s, got %q", want, v)
		}
		*dst = T(n)
		return nil
	})
}

// maxOf is the largest value of a signed integer type.
func maxOf[T ~int | ~int64]() T {
	var t T
	return T(uint64(math.MaxUint64) >> (65 - unsafe.Sizeof(t)*8))
}

// Float reads one argument as a number from min to max into a new float
// (a pointer field, so that 0 can be told from unset).
func Float(dst **float64, min, max float64) Option {
	return Func(func(a *Args) error {
		v, err := a.One()
		if err != nil {
			return err
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f >= min && f <= max) { // NaN fails both
			return a.Errf("want a number from %v to %v, got %q", min, max, v)
		}
		*dst = &f
		return nil
	})
}

// Size reads one argument as a byte size from min to max bytes, written
// like 65536, 64KiB, 1MB, 1 GiB.
func Size(dst *int64, min, max int64) Option {
	return Func(func(a *Args) error {
		v, err := a.One()
		if err != nil {
			return err
		}
		n, err := humanize.ParseBytes(v)
		if err != nil || n < uint64(min) || n > uint64(max) {
			return a.Errf("want a size from %s to %s (e.g. 128KiB), got %q", humanize.IBytes(uint64(min)), humanize.IBytes(uint64(max)), v)
		}
		*dst = int64(n)
		return nil
	})
}

// Forever is DurationIn's max when there is no upper bound.
const Forever = time.Duration(math.MaxInt64)

// PositiveDuration reads one argument as a duration above zero, in Caddy's
// syntax (500ms, 30s, 2m, 1d).
func PositiveDuration(dst *caddy.Duration) Option {
	return durationIn(dst, time.Nanosecond, Forever, "a duration above zero")
}

// DurationIn reads one argument as a duration from min to max (Forever: no
// upper bound), in Caddy's syntax.
func DurationIn(dst *caddy.Duration, min, max time.Duration) Option {
	want := "a duration from " + min.String() + " to " + max.String()
	if max == Forever {
		want = "a duration of at least " + min.String()
	}
	return durationIn(dst, min, max, want)
}

func durationIn(dst *caddy.Duration, min, max time.Duration, want string) Option {
	return Func(func(a *Args) error {
		v, err := a.One()
		if err != nil {
			return err
		}
		dur, err := caddy.ParseDuration(v)
		if err != nil || dur < min || dur > max {
			return a.Errf("want %s, got %q", want, v)
		}
		*dst = caddy.Duration(dur)
		return nil
	})
}

// ParseOnOff reads a switch: on or true, off or false.
func ParseOnOff(v string) (on, ok bool) {
	switch v {
	case "on", "true":
		return true, true
	case "off", "false":
		return false, true
	}
	return false, false
}

// OnOff reads one argument, on or off (also true or false), into a new bool
// (a pointer field, so that off can be told from unset).
func OnOff(dst **bool) Option {
	return Func(func(a *Args) error {
		v, err := a.One()
		if err != nil {
			return err
		}
		on, ok := ParseOnOff(v)
		if !ok {
			return a.Errf("want on or off, got %q", v)
		}
		*dst = &on
		return nil
	})
}

// Flag is an option without arguments that sets *dst.
func Flag(dst *bool) Option {
	return Func(func(a *Args) error {
		if err := a.None(); err != nil {
			return err
		}
		*dst = true
		return nil
	})
}

// OneOf reads one argument that must be one of values.
func OneOf(dst *string, values ...string) Option {
	want := strings.Join(values, " or ")
	if n := len(values); n > 2 {
		want = strings.Join(values[:n-1], ", ") + " or " + values[n-1]
	}
	return Checked(dst, func(v string) error {
		for _, ok := range values {
			if v == ok {
				return nil
			}
		}
		return fmt.Errorf("want %s, got %q", want, v)
	})
}

// Func is a once-only option read by read (which may consume a block, e.g.
// a nested module).
func Func(read func(a *Args) error) Option {
	return Option{read: read}
}

// Then returns o that also runs done after reading successfully (e.g. to
// set a pointer to a sub-block's config only when the block is given).
func (o Option) Then(done func()) Option {
	read := o.read
	o.read = func(a *Args) error {
		if err := read(a); err != nil {
			return err
		}
		done()
		return nil
	}
	return o
}

// Each is an option that may be given any number of times; read reads one
// occurrence.
func Each(read func(a *Args) error) Option {
	return Option{read: read, repeat: true}
}

// EachNamed is an option that may be given any number of times, each with a
// different first argument and at least min arguments after it, like
// `tier <name> <rate> [<family>...]` (min 1) or `family <name> <field>...`
// (min 1). Read refuses the same name twice ("<block>: tier free given
// twice"); read gets the name and the rest from a.Name() and a.Rest().
func EachNamed(min int, read func(a *Args) error) Option {
	return Option{read: read, repeat: true, named: true, min: min}
}
