package caddyopt

import (
	"fmt"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// Option says how one option of a block is read: a function that reads its
// arguments, and how often it may be given. Build one with the constructors
// in values.go (String, Positive, Size, OnOff, OneOf, Func, Each, EachNamed …).
type Option struct {
	read   func(a *Args) error
	repeat bool // may be given any number of times (Each, EachNamed)
	named  bool // … each time with a different first argument (EachNamed)
	min    int  // EachNamed: arguments wanted after the name
}

// Block maps each option name a block accepts to how it is read.
type Block map[string]Option

// Read reads a directive or global option named block that takes no
// arguments and an optional block of options, with the dispenser on its name
// (as UnmarshalCaddyfile gets it). Each option is read as opts says; refused,
// with the block's name first:
//
//	<block>: unknown option "<opt>"
//	<block>: <opt> given twice                 (a once-only option repeated)
//	<block>: <opt> <name> given twice          (EachNamed: the same name again)
//	<block>: <opt> takes no block              (an option followed by { … })
//	<block>: <opt>: want …, got "<value>"      (a bad value)
//
// Too few or too many arguments are Caddy's usual "wrong argument count"
// error. Every error names the file and line.
func Read(d *caddyfile.Dispenser, block string, opts Block) error {
	d.Next() // the directive or option name
	if d.NextArg() {
		return d.ArgErr()
	}
	return readBlock(d, block, opts)
}

// Sub is a once-only option that takes no arguments and a block of its own
// options, read like Read's (`subscriptions { max_per_key 10 }`); errors name
// it "<block> <opt>: …".
func Sub(opts Block) Option {
	return Func(func(a *Args) error { return ReadSub(a, opts) })
}

// ReadSub reads the block of the option a is at, as Sub does, for a Func
// that must also note that the option was given (a block whose absence and
// emptiness differ).
func ReadSub(a *Args, opts Block) error {
	if err := a.None(); err != nil {
		return err
	}
	return readBlock(a.d, a.block+" "+a.opt, opts)
}

// readBlock reads the options of the block the dispenser has just entered
// the line of.
func readBlock(d *caddyfile.Dispenser, block string, opts Block) error {
	nesting := d.Nesting()
	seen := map[string]bool{}
	names := map[string]map[string]bool{} // EachNamed: names given, per option
	for d.NextBlock(nesting) {
		opt := d.Val()
		o, ok := opts[opt]
		if !ok || o.read == nil {
			return d.Errf("%s: unknown option %q", block, opt)
		}
		if seen[opt] && !o.repeat {
			return d.Errf("%s: %s given twice", block, opt)
		}
		seen[opt] = true
		a := &Args{d: d, block: block, opt: opt}
		if o.named {
			name, rest, err := a.named(o.min)
			if err != nil {
				return err
			}
			if names[opt][name] {
				return d.Errf("%s: %s %s given twice", block, opt, name)
			}
			if names[opt] == nil {
				names[opt] = map[string]bool{}
			}
			names[opt][name] = true
			a.name, a.rest = name, rest
		}
		if err := o.read(a); err != nil {
			return err
		}
		// An option that read its arguments stops before a "{" on its line;
		// options that take a block (Func) consume it.
		if d.Nesting() == nesting+1 && d.NextBlock(nesting+1) {
			return d.Errf("%s: %s takes no block", block, opt)
		}
	}
	return nil
}

// Args is one option being read: the dispenser is on the option's name.
type Args struct {
	d          *caddyfile.Dispenser
	block, opt string
	name       string   // EachNamed: the first argument
	rest       []string // EachNamed: the arguments after it
}

// Block is the name of the directive or global option being read.
func (a *Args) Block() string { return a.block }

// Option is the option's name.
func (a *Args) Option() string { return a.opt }

// Name is the first argument of an EachNamed option ("free" in `tier free 30/m`).
func (a *Args) Name() string { return a.name }

// Rest is the arguments of an EachNamed option after its name.
func (a *Args) Rest() []string { return a.rest }

// Dispenser is the Caddyfile dispenser, for options that read a nested
// module (e.g. with caddyfile.UnmarshalModule).
func (a *Args) Dispenser() *caddyfile.Dispenser { return a.d }

// Errf is an error about this option's value: "<block>: <opt>: <message>",
// at the option's file and line.
func (a *Args) Errf(format string, args ...any) error {
	return a.d.Errf("%s: %s: %s", a.block, a.opt, fmt.Sprintf(format, args...))
}

// None checks that the option has no arguments.
func (a *Args) None() error {
	if a.d.NextArg() {
		return a.d.ArgErr()
	}
	return nil
}

// One is the option's single argument.
func (a *Args) One() (string, error) {
	if !a.d.NextArg() {
		return "", a.d.ArgErr()
	}
	v := a.d.Val()
	if a.d.NextArg() {
		return "", a.d.ArgErr()
	}
	return v, nil
}

// Two is the option's two arguments.
func (a *Args) Two() (string, string, error) {
	var x, y string
	if !a.d.Args(&x, &y) || a.d.NextArg() {
		return "", "", a.d.ArgErr()
	}
	return x, y, nil
}

// AtLeast is the option's arguments, at least min of them.
func (a *Args) AtLeast(min int) ([]string, error) {
	args := a.d.RemainingArgs()
	if len(args) < min {
		return nil, a.d.ArgErr()
	}
	return args, nil
}

// named reads an EachNamed option's name and the min or more arguments after it.
func (a *Args) named(min int) (string, []string, error) {
	args, err := a.AtLeast(1 + min)
	if err != nil {
		return "", nil, err
	}
	return args[0], args[1:], nil
}
