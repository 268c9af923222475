package redisconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// Causes of a store error (the cause label of civicgate_redis_errors_total
// and of the log lines).
const (
	CauseTimeout     = "timeout"     // a deadline passed (dial, read, write, the call's context)
	CauseRefused     = "refused"     // nothing listens at the address (or it reset the connection)
	CauseAuth        = "auth"        // WRONGPASS, NOAUTH, NOPERM: credentials or ACL
	CauseTLS         = "tls"         // handshake or certificate verification failed
	CauseMoved       = "moved"       // MOVED / ASK beyond the redirects allowed (slot map changing)
	CauseClusterDown = "clusterdown" // CLUSTERDOWN, TRYAGAIN: slots not served
	CauseReadOnly    = "readonly"    // READONLY: a write reached a replica (failover under way)
	CauseLoading     = "loading"     // LOADING: the node is loading its dataset
	CauseOther       = "other"
)

// Causes lists every cause, in the order above.
var Causes = []string{CauseTimeout, CauseRefused, CauseAuth, CauseTLS, CauseMoved, CauseClusterDown,
	CauseReadOnly, CauseLoading, CauseOther}

// Cause classifies a Redis error (wrapped or not).
func Cause(err error) string {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		if c := replyCause(rerr.Error()); c != "" {
			return c
		}
	}
	var netErr net.Error
	var verr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var alert tls.AlertError
	var header tls.RecordHeaderError
	switch {
	case errors.As(err, &verr), errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &alert),
		errors.As(err, &header):
		return CauseTLS
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &netErr) && netErr.Timeout():
		return CauseTimeout
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return CauseRefused
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "tls: "), strings.Contains(msg, "x509: "):
		return CauseTLS
	case strings.Contains(msg, "connection refused"):
		return CauseRefused
	case strings.Contains(msg, "i/o timeout"), strings.Contains(msg, "deadline exceeded"):
		return CauseTimeout
	}
	// a reply error flattened into text (e.g. "ratelimit: redis window: NOPERM …")
	for _, part := range strings.Split(msg, ": ") {
		if c := replyCause(part); c != "" {
			return c
		}
	}
	return CauseOther
}

// replyWords are the error reply prefixes with a cause of their own.
var replyWords = []struct{ word, cause string }{
	{"WRONGPASS", CauseAuth}, {"NOAUTH", CauseAuth}, {"NOPERM", CauseAuth},
	{"MOVED", CauseMoved}, {"ASK", CauseMoved},
	{"CLUSTERDOWN", CauseClusterDown}, {"TRYAGAIN", CauseClusterDown},
	{"READONLY", CauseReadOnly}, {"LOADING", CauseLoading},
}

// replyCause classifies a Redis error reply by its prefix, or by the reply
// a script's call got ("ERR Error running script …: -READONLY …"); "" if
// none matches.
func replyCause(msg string) string {
	msg = strings.TrimPrefix(msg, "ERR ")
	for _, w := range replyWords {
		if strings.HasPrefix(msg, w.word+" ") || strings.Contains(msg, "-"+w.word+" ") {
			return w.cause
		}
	}
	return ""
}
