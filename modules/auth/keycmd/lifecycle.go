package keycmd

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// lifecycle makes the key's keystore.Lifecycle from issue's --expires,
// --name and --label at now, refusing a bad value as a usage error (exit 2)
// that says which flag and why, and quotes no name or label value
// (docs/design.md D71).
func (o opts) lifecycle(now time.Time) (keystore.Lifecycle, error) {
	var l keystore.Lifecycle
	bad := func(flag string, err error) error {
		return fmt.Errorf("%w: %s: %s", errUsage, flag, strings.TrimPrefix(err.Error(), "keystore: "))
	}
	if o.expires != "" {
		t, err := keystore.ParseExpiry(o.expires, now)
		if err != nil {
			return l, bad("--expires", err)
		}
		l.ExpiresAt = t
	}
	l.Name = o.name
	for _, s := range o.labels {
		k, v, err := keystore.ParseLabel(s)
		if err != nil {
			return l, bad("--label", err)
		}
		if _, dup := l.Labels[k]; dup {
			return l, fmt.Errorf("%w: --label: label %s given twice", errUsage, k)
		}
		if l.Labels == nil {
			l.Labels = map[string]string{}
		}
		l.Labels[k] = v
	}
	if err := l.Check(now); err != nil {
		flag := "--label"
		var le *keystore.LifecycleError
		if errors.As(err, &le) {
			switch le.Field {
			case keystore.FieldExpiry:
				flag = "--expires"
			case keystore.FieldName:
				flag = "--name"
			}
		}
		return l, bad(flag, err)
	}
	return l, nil
}

// parseExpiring reads list's --expiring: a positive Go duration or whole
// days (7d).
func parseExpiring(s string) (time.Duration, error) {
	d, err := parseOverlap(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%w: --expiring %q is not a positive duration (48h, 7d)", errUsage, s)
	}
	return d, nil
}
