package webhooks

import (
	"cmp"
	"fmt"
	"sync"
)

// An organization has one endpoint limit and one replay bound, whichever
// front end it uses (docs/design.md D43): every Service built over one App —
// the civic_webhooks handler's, the console's — shares them. A value set on
// one of them (max_endpoints, max_replay) applies to all; two different
// values are a configuration error; unset everywhere, the defaults apply.

// limits are the bounds set explicitly by the Services over one App.
type limits struct {
	maxEndpoints, maxReplay int // 0: not set by anyone
	services                int // open Services over the App
}

var sharedLimits = struct {
	sync.Mutex
	byApp map[*App]*limits
}{byApp: map[*App]*limits{}}

// register records the bounds of a new Service over a (0 = not set); it
// refuses a value another Service over a set differently.
func (a *App) register(maxEndpoints, maxReplay int) error {
	sharedLimits.Lock()
	defer sharedLimits.Unlock()
	l := sharedLimits.byApp[a]
	if l == nil {
		l = &limits{}
	}
	if maxEndpoints > 0 && l.maxEndpoints > 0 && maxEndpoints != l.maxEndpoints {
		return fmt.Errorf("max_endpoints %d differs from the %d set elsewhere on the same civic_webhooks app: "+
			"an organization has one endpoint limit, whether it uses the API or the console; set one value", maxEndpoints, l.maxEndpoints)
	}
	if maxReplay > 0 && l.maxReplay > 0 && maxReplay != l.maxReplay {
		return fmt.Errorf("max_replay %d differs from the %d set elsewhere on the same civic_webhooks app: set one value", maxReplay, l.maxReplay)
	}
	l.maxEndpoints = max(l.maxEndpoints, maxEndpoints)
	l.maxReplay = max(l.maxReplay, maxReplay)
	l.services++
	sharedLimits.byApp[a] = l
	return nil
}

// release forgets a closed Service; the last one forgets a.
func (a *App) release() {
	sharedLimits.Lock()
	defer sharedLimits.Unlock()
	if l := sharedLimits.byApp[a]; l != nil {
		if l.services--; l.services <= 0 {
			delete(sharedLimits.byApp, a)
		}
	}
}

// bounds are the endpoint limit and replay bound in force over a.
func (a *App) bounds() (maxEndpoints, maxReplay int) {
	sharedLimits.Lock()
	defer sharedLimits.Unlock()
	maxEndpoints, maxReplay = DefaultMaxEndpoints, DefaultMaxReplay
	if l := sharedLimits.byApp[a]; l != nil {
		maxEndpoints, maxReplay = cmp.Or(l.maxEndpoints, maxEndpoints), cmp.Or(l.maxReplay, maxReplay)
	}
	return maxEndpoints, maxReplay
}
