package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// Caller is who manages endpoints: what civic_auth's placeholders give the
// HTTP API, and what the console derives from a signed-in member's
// organization (Service.CallerOf, plus the member's role).
type Caller struct {
	Org string // organization id ({civic.org})
	Env string // key environment ("live"/"test"; "" = any)
	// Families is every family the caller's tier(s) entitle: ManageFamily
	// to use the service at all, change-event families to receive them
	// (GraphQL-only families are ignored).
	Families []string
	// ReadOnly callers (a console viewer) may list and read, never change
	// (ErrReadOnly). An API key is never read-only.
	ReadOnly bool
}

// changeFamilies is the change-event families (all, in its order) c is
// entitled to.
func (c Caller) changeFamilies(all []string) []string {
	var out []string
	for _, f := range all {
		if c.entitled(f) {
			out = append(out, f)
		}
	}
	return out
}

func (c Caller) entitled(family string) bool {
	return slices.Contains(c.Families, family)
}

// InputError is a refusal of the caller's input; Message is client-facing
// (no internals). The HTTP API answers it 400 in the errors-array form.
type InputError struct{ Message string }

func (e *InputError) Error() string { return e.Message }

func inputError(format string, args ...any) error {
	return &InputError{Message: fmt.Sprintf(format, args...)}
}

// ErrNotEntitled is returned when the caller's tier does not include a
// requested family (the HTTP API answers 403 contract.BodyNotEntitled). An
// endpoint that does not exist or belongs to another organization is
// store.ErrNotFound (404, never 403).
var ErrNotEntitled = errors.New("webhooks: the caller's tier does not include a requested family")

// errNoOrg is Create's refusal of a caller without an organization: a
// mistake of the code building the Caller, never of its input.
var errNoOrg = errors.New("webhooks: caller has no organization")

// Service manages webhook endpoints with every rule of the HTTP API
// (docs/design.md D43): who may call (admit: organization status, the
// changes family, read-only callers), URL policy, families, the endpoint
// limit and the replay bound. The HTTP handler and the organization console
// both call it, so they refuse and accept alike. It is safe for concurrent
// use; ctx bounds each call's database work.
type Service struct {
	app      *App
	released sync.Once
}

// Service returns a Service over a's store and policies. maxEndpoints (per
// organization) and maxReplay (events per replay) are shared by every
// Service over a (0 = as set by another, else DefaultMaxEndpoints /
// DefaultMaxReplay); a value that differs from another's is refused. Close
// it when its user is cleaned up.
func (a *App) Service(maxEndpoints, maxReplay int) (*Service, error) {
	if err := a.register(maxEndpoints, maxReplay); err != nil {
		return nil, err
	}
	return &Service{app: a}, nil
}

// Close releases the Service's share of the limits (idempotent).
func (s *Service) Close() {
	s.released.Do(s.app.release)
}

// MaxEndpoints is the endpoint limit per organization in force.
func (s *Service) MaxEndpoints() int {
	n, _ := s.app.bounds()
	return n
}

// TierFamilies is the change-event families (EventFamilies order) the
// configured tier entitles (empty when it entitles none); nil for a tier
// civic_webhooks does not configure.
func (a *App) TierFamilies(tier string) []string {
	tc, ok := a.Tiers[tier]
	if !ok {
		return nil
	}
	if fams := (Caller{Families: tc.Families}).changeFamilies(a.eventFamilies); fams != nil {
		return fams
	}
	return []string{}
}

// Create registers an endpoint for c's organization and returns it with its
// signing secret (shown once: it is stored sealed). families nil means every
// change-event family c is entitled to; an empty non-nil list is refused.
// Refusals: admit's, *InputError (url, description, families, the endpoint
// limit) and ErrNotEntitled.
func (s *Service) Create(ctx context.Context, c Caller, url string, families []string, description string) (store.Endpoint, string, error) {
	if err := s.admit(ctx, c, true); err != nil {
		return store.Endpoint{}, "", err
	}
	if url == "" {
		return store.Endpoint{}, "", inputError("url is required")
	}
	if _, err := s.app.policy.CheckURL(url); err != nil {
		return store.Endpoint{}, "", inputError("url: %s", strings.TrimPrefix(err.Error(), "egress: target refused: "))
	}
	if len(description) > 1024 {
		return store.Endpoint{}, "", inputError("description is longer than 1024 bytes")
	}
	fams, err := resolveFamilies(s.app.eventFamilies, c, families)
	if err != nil {
		return store.Endpoint{}, "", err
	}
	maxEndpoints := s.MaxEndpoints()
	e, secret, err := s.app.store.CreateEndpoint(ctx, s.app.now(), store.EndpointSpec{Org: c.Org, Env: c.Env, URL: url,
		Families: fams, Description: description}, maxEndpoints)
	if errors.Is(err, store.ErrTooMany) {
		return store.Endpoint{}, "", inputError("an organization may register at most %d webhook endpoints; delete one first", maxEndpoints)
	}
	if err != nil {
		return store.Endpoint{}, "", err
	}
	return e, secret, nil
}

// resolveFamilies checks a requested family list against the change-event
// families all and c (nil = every change-event family c is entitled to) and
// returns it without duplicates.
func resolveFamilies(all []string, c Caller, requested []string) ([]string, error) {
	if requested == nil {
		fams := c.changeFamilies(all)
		if len(fams) == 0 {
			return nil, ErrNotEntitled
		}
		return fams, nil
	}
	seen := map[string]bool{}
	out := []string{}
	for _, f := range requested {
		if !slices.Contains(all, f) {
			return nil, inputError("unknown family %q (families: %s)", f, strings.Join(all, ", "))
		}
		if !c.entitled(f) {
			return nil, ErrNotEntitled
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, inputError("families must not be empty")
	}
	return out, nil
}

// Every method below refuses what admit refuses (reads included, as the
// API's route does); an endpoint that is absent or another organization's
// is store.ErrNotFound.

// List returns c's organization's endpoints, oldest first (never a secret).
func (s *Service) List(ctx context.Context, c Caller) ([]store.Endpoint, error) {
	if err := s.admit(ctx, c, false); err != nil {
		return nil, err
	}
	return s.app.store.ListEndpoints(ctx, c.Org)
}

// Get returns c's organization's endpoint id.
func (s *Service) Get(ctx context.Context, c Caller, id string) (store.Endpoint, error) {
	if err := s.admit(ctx, c, false); err != nil {
		return store.Endpoint{}, err
	}
	return s.app.store.GetEndpoint(ctx, c.Org, id)
}

// Delete removes c's organization's endpoint id and its deliveries.
func (s *Service) Delete(ctx context.Context, c Caller, id string) error {
	if err := s.admit(ctx, c, true); err != nil {
		return err
	}
	return s.app.store.DeleteEndpoint(ctx, c.Org, id)
}

// RotateSecret gives c's organization's endpoint id a new secret (shown
// once) and returns when the previous one stops signing (the app's rotation
// overlap from now).
func (s *Service) RotateSecret(ctx context.Context, c Caller, id string) (secret string, previousExpiresAt time.Time, err error) {
	if err := s.admit(ctx, c, true); err != nil {
		return "", time.Time{}, err
	}
	now := s.app.now()
	secret, err = s.app.store.RotateSecret(ctx, now, c.Org, id, s.app.overlap)
	if err != nil {
		return "", time.Time{}, err
	}
	return secret, now.Add(s.app.overlap).UTC(), nil
}

// Test schedules a "ping" delivery (one attempt) to c's organization's
// endpoint id and returns its webhook-id.
func (s *Service) Test(ctx context.Context, c Caller, id string) (eventID string, err error) {
	if err := s.admit(ctx, c, true); err != nil {
		return "", err
	}
	now := s.app.now()
	return s.app.store.Test(ctx, now, c.Org, id, func(eventID string) ([]byte, error) {
		b, err := json.Marshal(store.Envelope{ID: eventID, Type: "ping", OccurredAt: now.UTC(), Data: store.Ping{EndpointID: id}})
		if err != nil {
			return nil, fmt.Errorf("webhooks: ping: %w", err)
		}
		return b, nil
	})
}

// Replay schedules the events after fromCursor (nil = since the endpoint
// was registered) in the endpoint's families that c is still entitled to, at
// most the service's maxReplay, for delivery to c's endpoint id again with
// their webhook-ids. nextCursor is non-nil when more events follow (replay
// again from it). A bad cursor is an *InputError.
func (s *Service) Replay(ctx context.Context, c Caller, id string, fromCursor *string) (scheduled int, nextCursor *string, err error) {
	if err := s.admit(ctx, c, true); err != nil {
		return 0, nil, err
	}
	after := store.SinceCreation
	if fromCursor != nil {
		if after, err = store.DecodeCursor(*fromCursor); err != nil {
			return 0, nil, inputError("from_cursor is not a cursor of this feed")
		}
	}
	_, maxReplay := s.app.bounds()
	res, err := s.app.store.Replay(ctx, s.app.now(), c.Org, id, after, maxReplay, c.changeFamilies(s.app.eventFamilies))
	if err != nil {
		return 0, nil, err
	}
	if res.More {
		next := store.EncodeCursor(res.LastSeq)
		nextCursor = &next
	}
	return res.Scheduled, nextCursor, nil
}

// Deliveries lists c's organization's endpoint id's deliveries, newest
// first: at most limit (1 to MaxLimit) with an id below before (0 = from the
// newest); more reports whether older ones follow.
func (s *Service) Deliveries(ctx context.Context, c Caller, id string, before int64, limit int) (ds []store.Delivery, more bool, err error) {
	if err := s.admit(ctx, c, false); err != nil {
		return nil, false, err
	}
	if limit < 1 || limit > MaxLimit {
		return nil, false, inputError("limit must be an integer from 1 to %d", MaxLimit)
	}
	if before < 0 {
		return nil, false, inputError("cursor is not a cursor of this list")
	}
	return s.app.store.Deliveries(ctx, c.Org, id, before, limit)
}
