package webhooks

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/civicgate/civicgate/modules/webhooks/store"
)

func (h *Handler) changes(ctx context.Context, w http.ResponseWriter, r *http.Request, c Caller) error {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return badRequest(w, "malformed query string")
	}
	for k := range q {
		if k != "after" && k != "limit" && k != "families" {
			return badRequest(w, fmt.Sprintf("unknown parameter %q", k))
		}
	}
	limit, err := parseLimit(q)
	if err != nil {
		return badRequest(w, err.Error())
	}
	after, err := store.DecodeCursor(q.Get("after"))
	if err != nil {
		return badRequest(w, "after is not a cursor of this feed")
	}
	var requested []string
	if q.Has("families") {
		requested = []string{}
		for _, f := range strings.Split(q.Get("families"), ",") {
			if f = strings.TrimSpace(f); f != "" {
				requested = append(requested, f)
			}
		}
	}
	fams, err := resolveFamilies(h.app.eventFamilies, c, requested)
	if err != nil {
		return h.fail(w, r, err)
	}
	evs, more, err := h.app.store.Changes(ctx, after, fams, limit)
	if err != nil {
		return h.fail(w, r, err)
	}
	items := make([]store.Envelope, 0, len(evs))
	for _, e := range evs {
		items = append(items, e.Envelope())
	}
	var next *string
	if more {
		next = items[len(items)-1].Cursor
	}
	return writeJSON(w, http.StatusOK, page{Items: items, NextCursor: next})
}

// Deliveries cursors: base64url of "wd1:<delivery id>".
func encodeDeliveryCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("wd1:" + strconv.FormatInt(id, 10)))
}

func decodeDeliveryCursor(c string) (int64, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, err
	}
	s, ok := strings.CutPrefix(string(raw), "wd1:")
	if !ok {
		return 0, errors.New("bad cursor")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New("bad cursor")
	}
	return n, nil
}

func (h *Handler) deliveries(ctx context.Context, w http.ResponseWriter, r *http.Request, c Caller, id string) error {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return badRequest(w, "malformed query string")
	}
	for k := range q {
		if k != "cursor" && k != "limit" {
			return badRequest(w, fmt.Sprintf("unknown parameter %q", k))
		}
	}
	limit, err := parseLimit(q)
	if err != nil {
		return badRequest(w, err.Error())
	}
	var before int64
	if v := q.Get("cursor"); v != "" {
		if before, err = decodeDeliveryCursor(v); err != nil {
			return badRequest(w, "cursor is not a cursor of this list")
		}
	}
	ds, more, err := h.svc.Deliveries(ctx, c, id, before, limit)
	if err != nil {
		return h.fail(w, r, err)
	}
	var next *string
	if more {
		s := encodeDeliveryCursor(ds[len(ds)-1].ID)
		next = &s
	}
	return writeJSON(w, http.StatusOK, page{Items: ds, NextCursor: next})
}
