package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/civicgate/civicgate/backend/records"
	"github.com/civicgate/civicgate/backend/store"
)

// ParseBillsQuery turns GET /bills query parameters (congress, type, q, cursor, limit) into a BillsInput.
// Unknown or repeated parameters, a congress that is not a 32-bit integer, a non-integer limit, and a limit outside 1..100 are
// *records.InputError naming the parameter. The cursor is checked by the store.
func ParseBillsQuery(v url.Values) (records.BillsInput, error) {
	var in records.BillsInput
	for name, vals := range v {
		if len(vals) != 1 {
			return in, &records.InputError{Field: name, Message: fmt.Sprintf("parameter %q must be given once", name)}
		}
		val := vals[0]
		switch name {
		case "congress":
			// 32 bits, as GraphQL's Int (and the column): a larger number is refused here as
			// bills(input: {congress:}) refuses it, rather than reaching PostgreSQL.
			n, err := strconv.ParseInt(val, 10, 32)
			if err != nil {
				return in, &records.InputError{Field: name, Message: "parameter \"congress\" must be a 32-bit integer"}
			}
			c := int(n)
			in.Congress = &c
		case "limit":
			n, err := strconv.Atoi(val)
			if err != nil {
				return in, &records.InputError{Field: name, Message: fmt.Sprintf("parameter \"limit\" must be an integer between 1 and %d", records.MaxLimit)}
			}
			if _, err := records.Limit(&n); err != nil {
				return in, &records.InputError{Field: name, Message: fmt.Sprintf("parameter \"limit\" must be between 1 and %d", records.MaxLimit)}
			}
			in.Limit = &n
		case "type":
			in.Type = &val
		case "q":
			in.Q = &val
		case "cursor":
			in.Cursor = &val
		default:
			return in, &records.InputError{Field: name, Message: fmt.Sprintf("unknown parameter %q", name)}
		}
	}
	return in, nil
}

func (s *Server) bills(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeErrors(w, http.StatusMethodNotAllowed, "Use GET")
		return
	}
	if claims := Claims(r.Context()); claims != nil && !claims.Entitled(FamilyBills) {
		s.log.Info("refused GET /bills outside the asserted families", "key_id", claims.KeyID(), "tier", claims.Tier)
		refuseNotEntitled(w)
		return
	}
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeErrors(w, http.StatusBadRequest, "malformed query string")
		return
	}
	in, err := ParseBillsQuery(vals)
	if err != nil {
		writeErrors(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := contextWithTimeout(r, s.cfg.QueryTimeout)
	defer cancel()
	page, err := s.cfg.Store.Bills(ctx, in)
	if err != nil {
		if ie, ok := store.IsInputError(err); ok {
			writeErrors(w, http.StatusBadRequest, fmt.Sprintf("parameter %q: %s", ie.Field, ie.Message))
			return
		}
		s.logFault(ctx, "GET /bills fault", err)
		writeInternalError(w)
		return
	}
	writeJSON(w, http.StatusOK, page)
}
