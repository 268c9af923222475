package keystore

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// A key's lifecycle (docs/design.md D71): an optional expiry, a name and
// free-form labels, set when the key is issued (`keys issue --expires
// --name --label`, the console's issue form) and kept with it in the
// database (migration 0005) or the keys file. The gateway refuses a key from
// its expiry on with 401 "API key expired", comparing the cached record's
// ExpiresAt with its clock at each request.

// The bounds of a name and of labels.
const (
	MaxNameLen       = 100 // characters
	MaxLabels        = 16
	MaxLabelValueLen = 200 // characters
	// MaxExpiryAhead is how far ahead an expiry may be: far enough for any
	// grant, near enough that every store and encoder (RFC 3339, four-digit
	// years) holds it.
	MaxExpiryAhead = 100 * 365 * 24 * time.Hour
)

var labelKey = regexp.MustCompile(`^[a-z0-9_.-]{1,32}$`)

// StatusExpired is the effective status of an active or rotating key whose
// expiry has come (EffectiveStatus; never stored): it is refused and no
// longer counts as one of the organization's live keys.
const StatusExpired = "expired"

// ErrBadLifecycle is matched by every refusal of Lifecycle.Check.
var ErrBadLifecycle = errors.New("keystore: bad key name, labels or expiry")

// Lifecycle is what a key is issued with beside its organization, tier and
// environment; the zero value is a key with no name, no labels and no expiry.
type Lifecycle struct {
	Name   string
	Labels map[string]string
	// ExpiresAt is when the key stops being accepted (zero: never).
	ExpiresAt time.Time
}

// The fields a LifecycleError names.
const (
	FieldName   = "name"
	FieldLabels = "labels"
	FieldExpiry = "expiry"
)

// LifecycleError is a refusal of Check, ParseLabel or ParseExpiry: Field says
// which value (FieldName, FieldLabels, FieldExpiry). It matches
// ErrBadLifecycle.
type LifecycleError struct {
	Field string
	msg   string
}

func (e *LifecycleError) Error() string        { return "keystore: " + e.msg }
func (e *LifecycleError) Is(target error) bool { return target == ErrBadLifecycle }

func badLifecycle(field, format string, args ...any) error {
	return &LifecycleError{Field: field, msg: fmt.Sprintf(format, args...)}
}

// Check verifies l at now: a name of at most MaxNameLen printable characters,
// at most MaxLabels labels whose keys match [a-z0-9_.-]{1,32} and whose values
// are at most MaxLabelValueLen printable characters (no control character,
// tab or newline), and an expiry, when set, after now and at most
// MaxExpiryAhead ahead. Its messages quote no name or value (they may hold
// anything), only label keys, which the pattern makes safe.
func (l Lifecycle) Check(now time.Time) error {
	if err := checkNameAndLabels(l.Name, l.Labels); err != nil {
		return err
	}
	if !l.ExpiresAt.IsZero() {
		switch {
		case !l.ExpiresAt.After(now):
			return badLifecycle(FieldExpiry, "expiry %s is not in the future", l.ExpiresAt.UTC().Format(time.RFC3339))
		case l.ExpiresAt.Sub(now) > MaxExpiryAhead:
			return badLifecycle(FieldExpiry, "expiry is more than 100 years ahead")
		}
	}
	return nil
}

// checkNameAndLabels is Check without the expiry (a keys file's keys keep
// their expiry once it has passed).
func checkNameAndLabels(name string, labels map[string]string) error {
	if err := checkPrintable(FieldName, "name", name, MaxNameLen); err != nil {
		return err
	}
	if len(labels) > MaxLabels {
		return badLifecycle(FieldLabels, "%d labels; at most %d", len(labels), MaxLabels)
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if !labelKey.MatchString(k) {
			return badLifecycle(FieldLabels, "a label key must be 1 to 32 of a-z 0-9 _ . - (got %d bytes)", len(k))
		}
		if err := checkPrintable(FieldLabels, "label "+k, labels[k], MaxLabelValueLen); err != nil {
			return err
		}
	}
	return nil
}

// checkPrintable refuses s unless it is valid UTF-8 of at most max printable
// characters (unicode.IsPrint: no control, format or line-separator
// character, no tab or newline) holding nothing shaped like an API key (a
// key pasted into a name would be stored and shown in the clear).
func checkPrintable(field, what, s string, max int) error {
	if ContainsKeyShape(s) {
		return badLifecycle(field, "%s holds something shaped like an API key; never put a key in a name or label", what)
	}
	if !utf8.ValidString(s) {
		return badLifecycle(field, "%s is not valid UTF-8", what)
	}
	if n := utf8.RuneCountInString(s); n > max {
		return badLifecycle(field, "%s is %d characters; at most %d", what, n, max)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return badLifecycle(field, "%s holds a control or invisible character (U+%04X); only printable characters are allowed", what, r)
		}
	}
	return nil
}

// ParseLabel reads one "key=value" label (`--label`).
func ParseLabel(s string) (key, value string, err error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", badLifecycle(FieldLabels, "a label is key=value")
	}
	if !labelKey.MatchString(k) {
		return "", "", badLifecycle(FieldLabels, "a label key must be 1 to 32 of a-z 0-9 _ . - (got %d bytes)", len(k))
	}
	return k, v, nil
}

// ParseExpiry reads an expiry as `keys issue --expires` takes it, at now: a
// positive Go duration (90m, 720h), whole days (30d) or an RFC 3339 time with
// its offset (2027-01-31T00:00:00Z); the result is in UTC and checked by
// Lifecycle.Check.
func ParseExpiry(s string, now time.Time) (time.Time, error) {
	bad := badLifecycle(FieldExpiry, "expiry %q is not a duration (90m, 720h, 30d) or an RFC 3339 time (2027-01-31T00:00:00Z)", clip(s))
	if n, ok := strings.CutSuffix(s, "d"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
		if len(n) > 6 {
			return time.Time{}, bad
		}
		days := 0
		for _, c := range n {
			days = days*10 + int(c-'0')
		}
		if days == 0 {
			return time.Time{}, bad
		}
		return now.Add(time.Duration(days) * 24 * time.Hour).UTC(), nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, bad
		}
		return now.Add(d).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, bad
	}
	// time.Parse takes an offset hour of 24, which RFC 3339 (00–23) does not.
	if _, offset := t.Zone(); offset <= -24*60*60 || offset >= 24*60*60 {
		return time.Time{}, bad
	}
	return t.UTC(), nil
}

// clip is s, shortened and with every non-printable character replaced, for
// quoting a command-line value back in an error.
func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	if utf8.RuneCountInString(s) > 40 {
		s = string([]rune(s)[:40]) + "…"
	}
	return s
}

// expired reports whether a key expiring at expiresAt (zero: never) has
// expired at now.
func expired(expiresAt, now time.Time) bool { return !expiresAt.IsZero() && !now.Before(expiresAt) }

// Expired reports whether the key has expired at now.
func (r *Record) Expired(now time.Time) bool { return expired(r.ExpiresAt, now) }

// Equal reports whether r and o are the same record (Labels compared by
// content).
func (r Record) Equal(o Record) bool {
	return r.KeyID == o.KeyID && r.OrgID == o.OrgID && r.OrgName == o.OrgName && r.OrgStatus == o.OrgStatus &&
		r.Env == o.Env && r.Tier == o.Tier && r.Status == o.Status && r.RotatesOut.Equal(o.RotatesOut) &&
		r.Name == o.Name && r.ExpiresAt.Equal(o.ExpiresAt) && maps.Equal(r.Labels, o.Labels) &&
		r.GrantRequests == o.GrantRequests && r.GrantCost == o.GrantCost && r.GrantUntil.Equal(o.GrantUntil)
}

// FormatLabels writes labels as "k=v,k=v" in key order ("" for none), as
// `keys list` and the audit log show them.
func FormatLabels(labels map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(labels)) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(labels[k])
	}
	return b.String()
}

// AuditDetail is what the audit entry of an issue adds for the key's
// lifecycle, the same from the key commands and the console: ", expires
// <RFC 3339 UTC>", ", name <quoted>", ", labels k=v,k=v" ("" for none). The
// name is quoted (strconv.Quote); Check keeps both printable.
func (l Lifecycle) AuditDetail() string {
	var b strings.Builder
	if !l.ExpiresAt.IsZero() {
		b.WriteString(", expires " + l.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if l.Name != "" {
		b.WriteString(", name " + strconv.Quote(l.Name))
	}
	if len(l.Labels) > 0 {
		b.WriteString(", labels " + FormatLabels(l.Labels))
	}
	return b.String()
}
