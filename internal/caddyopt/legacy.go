package caddyopt

import (
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// The helpers below predate Read; they go once no block uses them.

// OneArg reads the single argument of the current option into dst.
// Superseded: read the block with Read and String.
func OneArg(d *caddyfile.Dispenser, dst *string) error {
	if !d.NextArg() {
		return d.ArgErr()
	}
	*dst = d.Val()
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

// PositiveInt reads the single argument of the current option as an
// integer ≥ 1.
// Superseded: read the block with Read and Positive.
func PositiveInt(d *caddyfile.Dispenser, dst *int) error {
	opt := d.Val()
	var v string
	if err := OneArg(d, &v); err != nil {
		return err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return d.Errf("%s: want a positive integer, got %q", opt, v)
	}
	*dst = n
	return nil
}

// Duration reads the single argument of the current option as a duration
// above zero (Caddy syntax, e.g. 30s, 2m, 1d).
// Superseded: read the block with Read and PositiveDuration.
func Duration(d *caddyfile.Dispenser, dst *caddy.Duration) error {
	opt := d.Val()
	var v string
	if err := OneArg(d, &v); err != nil {
		return err
	}
	dur, err := caddy.ParseDuration(v)
	if err != nil || dur <= 0 {
		return d.Errf("%s: want a duration above zero, got %q", opt, v)
	}
	*dst = caddy.Duration(dur)
	return nil
}

// Options reads a directive or global option that takes no arguments and a
// block of options, each given at most once: it consumes the name, then
// calls option with the dispenser on each option's name (option reads the
// arguments). A repeated option is an error.
// Superseded: use Read.
func Options(d *caddyfile.Dispenser, option func(opt string) error) error {
	d.Next() // the directive or option name
	if d.NextArg() {
		return d.ArgErr()
	}
	seen := map[string]bool{}
	for d.NextBlock(0) {
		opt := d.Val()
		if seen[opt] {
			return d.Errf("duplicate %s", opt)
		}
		seen[opt] = true
		if err := option(opt); err != nil {
			return err
		}
	}
	return nil
}
