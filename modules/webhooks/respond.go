package webhooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
)

// bodyWriter writes the API's bodies: never cached.
var bodyWriter = contract.JSONWriter{NoStore: true}

// writeRaw writes a body already encoded: one of the exact bodies of
// docs/api.md "Errors" (contract.Body*) or a response.
func writeRaw(w http.ResponseWriter, status int, body []byte) error {
	bodyWriter.Write(w, status, body)
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return writeRaw(w, http.StatusInternalServerError, contract.BodyInternal)
	}
	return writeRaw(w, status, b)
}

// badRequest answers 400 in the errors-array form.
func badRequest(w http.ResponseWriter, msg string) error {
	return writeRaw(w, http.StatusBadRequest, contract.MessageBodyHTMLEscaped(msg))
}

func notAllowed(w http.ResponseWriter, allow string) error {
	w.Header().Set("Allow", allow)
	return writeRaw(w, http.StatusMethodNotAllowed, contract.BodyMethodNotAllowed)
}

// internal logs err (never a secret: store errors carry no DSN or secret) and
// answers 500.
func (h *Handler) internal(w http.ResponseWriter, r *http.Request, err error) error {
	h.logger.Error("webhooks API failed", zap.String("path", r.URL.Path), zap.Error(err))
	return writeRaw(w, http.StatusInternalServerError, contract.BodyInternal)
}

// parseLimit reads limit (1..100, default 25): never clamped.
func parseLimit(q url.Values) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxLimit {
		return 0, errors.New("limit must be an integer from 1 to 100")
	}
	return n, nil
}

// decodeBody reads a JSON object body into v (unknown members refused). An
// empty body is allowed when emptyOK.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, emptyOK bool) bool {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		_ = badRequest(w, "cannot read the request body")
		return false
	}
	if len(body) > maxBody {
		_ = writeRaw(w, http.StatusRequestEntityTooLarge, contract.BodyTooLarge)
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 && emptyOK {
		return true
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			_ = writeRaw(w, http.StatusUnsupportedMediaType, contract.MessageBodyHTMLEscaped("Content-Type must be application/json"))
			return false
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		_ = badRequest(w, "request body is not the expected JSON object: "+jsonProblem(err))
		return false
	}
	if dec.More() {
		_ = badRequest(w, "request body has trailing data")
		return false
	}
	return true
}

func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s must be %s", te.Field, te.Type.String())
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "malformed JSON"
	}
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		return "unknown member " + strings.TrimPrefix(msg, "json: unknown field ")
	}
	return "malformed JSON"
}
