package gqlguard

import (
	"errors"
	"net"
	"net/http"

	"github.com/civicgate/civicgate/modules/gqlguard/request"
)

// The HTTP-level refusals before the request step locates the members:
// method, media type, body size and read failures.

// checkMethodAndType refuses anything but a POST of JSON (or a GET, checked
// elsewhere, when methods allows it); it returns the refusal's outcome, or ""
// to go on.
func (g *Guard) checkMethodAndType(w http.ResponseWriter, r *http.Request) string {
	if r.Method != http.MethodPost || !g.allowPOST {
		w.Header().Set("Allow", g.allowHeader)
		writeJSON(w, http.StatusMethodNotAllowed, messageBody(g.methodMessage))
		return outcomeMethod
	}
	if !request.IsJSONContentType(r.Header.Get("Content-Type")) {
		writeJSON(w, http.StatusUnsupportedMediaType, messageBody(msgUnsupportedMediaType))
		return outcomeMediaType
	}
	return ""
}

// readBodyChecked reads the body within MaxBody; a body over the limit, a
// timed-out read or a failed one is refused, returning the outcome ("" with
// the body when it was read).
func (g *Guard) readBodyChecked(w http.ResponseWriter, r *http.Request) ([]byte, string) {
	if r.ContentLength > g.MaxBody {
		writeJSON(w, http.StatusRequestEntityTooLarge, messageBody(msgBodyTooLarge))
		return nil, outcomeTooLarge
	}
	body, err := request.ReadBody(r, g.MaxBody)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, messageBody(msgBodyTooLarge))
			return nil, outcomeTooLarge
		}
		// The server's read timeout (Caddy's servers/timeouts/read_body) ran
		// out while the client trickled its body: 408, not a malformed body.
		var netErr net.Error
		if errors.As(err, &netErr) && netErr.Timeout() {
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusRequestTimeout, messageBody(msgBodyTimeout))
			return nil, outcomeBodyTimeout
		}
		writeJSON(w, http.StatusBadRequest, messageBody(msgReadFailed))
		return nil, outcomeBadRequest
	}
	if int64(len(body)) > g.MaxBody {
		writeJSON(w, http.StatusRequestEntityTooLarge, messageBody(msgBodyTooLarge))
		return nil, outcomeTooLarge
	}
	return body, ""
}
