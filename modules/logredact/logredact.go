// Package logredact is the Caddy log encoder caddy.logging.encoders.civic_redact:
// it wraps another encoder and replaces the secret of every civicgate key in
// each encoded line with REDACTED (docs/design.md D19; docs/security.md
// "Deployment"). See README.md.
package logredact

import (
	"encoding/json"
	"fmt"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/logging"
	"go.uber.org/zap/buffer"
	"go.uber.org/zap/zapcore"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

func init() {
	caddy.RegisterModule(Encoder{})
}

// inner is the wrapped encoder; embedded, it receives every field as is.
type inner = zapcore.Encoder

// Encoder encodes log entries with another encoder, then replaces the secret
// of every key-shaped "cg_live_…"/"cg_test_…" in the encoded line (any field,
// the message, nested objects; literal or percent-encoded, as
// keystore.RedactKeys finds them) with REDACTED. A line with neither "cg_"
// nor '%' is returned untouched after one scan, without allocating.
type Encoder struct {
	// The encoder that writes the line. Default: json.
	WrappedRaw json.RawMessage `json:"wrap,omitempty" caddy:"namespace=caddy.logging.encoders inline_key=format"`

	inner
}

// CaddyModule returns the Caddy module information.
func (Encoder) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "caddy.logging.encoders.civic_redact", New: func() caddy.Module { return new(Encoder) }}
}

// Provision loads the wrapped encoder (json when none is configured).
func (e *Encoder) Provision(ctx caddy.Context) error {
	if e.WrappedRaw == nil {
		je := new(logging.JSONEncoder)
		if err := je.Provision(ctx); err != nil {
			return fmt.Errorf("civic_redact: provisioning the json encoder: %w", err)
		}
		e.inner = je
		return nil
	}
	val, err := ctx.LoadModule(e, "WrappedRaw")
	if err != nil {
		return fmt.Errorf("civic_redact: loading the wrapped encoder: %w", err)
	}
	enc, ok := val.(zapcore.Encoder)
	if !ok {
		return fmt.Errorf("civic_redact: wrapped module %T is not a log encoder", val)
	}
	e.inner = enc
	return nil
}

// ConfigureDefaultFormat passes the writer on to an explicitly wrapped encoder
// that chooses its format by it (e.g. a filter encoder without wrap); the
// default inner encoder stays json.
func (e *Encoder) ConfigureDefaultFormat(wo caddy.WriterOpener) error {
	if cfd, ok := e.inner.(caddy.ConfiguresFormatterDefault); ok && e.WrappedRaw != nil {
		if err := cfd.ConfigureDefaultFormat(wo); err != nil {
			return fmt.Errorf("civic_redact: %w", err)
		}
	}
	return nil
}

// Clone is part of zapcore.Encoder: a copy with the wrapped encoder cloned
// (and so its accumulated fields).
func (e *Encoder) Clone() zapcore.Encoder {
	return &Encoder{WrappedRaw: e.WrappedRaw, inner: e.inner.Clone()}
}

// EncodeEntry is part of zapcore.Encoder: the wrapped encoder's line, keys
// redacted in place.
func (e *Encoder) EncodeEntry(ent zapcore.Entry, fields []zapcore.Field) (*buffer.Buffer, error) {
	buf, err := e.inner.EncodeEntry(ent, fields)
	if err != nil {
		return buf, err
	}
	b := buf.Bytes()
	if red := keystore.RedactKeys(b); len(red) != len(b) {
		// red is a prefix of buf's own storage: Write after Reset moves it
		// onto itself, leaving buf holding exactly red.
		buf.Reset()
		_, _ = buf.Write(red)
	}
	return buf, nil
}

// Interface guards
var (
	_ zapcore.Encoder                  = (*Encoder)(nil)
	_ caddy.Provisioner                = (*Encoder)(nil)
	_ caddy.ConfiguresFormatterDefault = (*Encoder)(nil)
)
