package redisconn

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// go-redis dials a new connection in a goroutine of its own, retrying with
// backoff, while the command that asked for it waits on its own context: when
// that context ends first, the command returns "context deadline exceeded" and
// the dial's real failure (a certificate signed by another CA, a refused port)
// reaches only go-redis' log line. A loaded machine makes that the usual case.
// The dialer below records the last failure of a Target's clients, so that
// Target.Warm can name the cause an operator has to fix instead of "timeout".

// dialFailure is the last failed dial of a Target's clients.
type dialFailure struct {
	err error
	at  time.Time
}

// keepAlive is go-redis' own default dialer policy (options.go
// defaultKeepAliveConfig), which a dialer of our own replaces.
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second, Interval: 5 * time.Second, Count: 3}

// dialer returns what go-redis' default dialer does (TCP, then TLS when
// tlsConf is set) honouring ctx for the handshake too, recording into t the
// outcome: a failure is kept, a success clears it.
func (t *Target) dialer(timeout time.Duration, tlsConf *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	nd := &net.Dialer{Timeout: timeout, KeepAliveConfig: keepAlive}
	td := &tls.Dialer{NetDialer: nd, Config: tlsConf}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		var err error
		if tlsConf == nil {
			c, err = nd.DialContext(ctx, network, addr)
		} else {
			c, err = td.DialContext(ctx, network, addr)
		}
		if err != nil {
			t.lastDial.Store(&dialFailure{err: err, at: time.Now()})
			return nil, err
		}
		t.lastDial.Store(nil)
		return c, nil
	}
}

// lastDialError is the failure of the last dial, if the last dial failed
// at or after since.
func (t *Target) lastDialError(since time.Time) error {
	f := t.lastDial.Load()
	if f == nil || f.at.Before(since) {
		return nil
	}
	return f.err
}

// Warm is Warm for a client t opened, except that a warm-up that ran out of
// time while the last dial had failed for another reason returns that
// reason ("tls: failed to verify certificate", not "context deadline
// exceeded"), the deadline kept in the message.
func (t *Target) Warm(ctx context.Context, c redis.UniversalClient, scripts ...*redis.Script) error {
	start := time.Now()
	err := Warm(ctx, c, scripts...)
	if err == nil || Cause(err) != CauseTimeout {
		return err
	}
	if dialErr := t.lastDialError(start); dialErr != nil && Cause(dialErr) != CauseTimeout {
		return fmt.Errorf("redis warm-up: no answer in time (%s); the last dial failed: %w", err.Error(), dialErr)
	}
	return err
}
