// Package collectors registers Prometheus collectors the way Caddy modules
// need it. Every configuration load (every `caddy reload`) provisions the
// modules again with a new metrics registry; a collector made anew there
// would start from zero, so counters fell back to 0 on every reload (issue
// 20). Register hands out one collector per description for the life of the
// process — kept in a caddy.UsagePool, the way Caddy keeps state across
// reloads — and registers it in each configuration's registry, so counters
// stay monotonic across reloads.
package collectors

import (
	"errors"
	"sort"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// live holds the collectors handed out, by description. Entries are never
// deleted: a metric's series must outlive every configuration that used it.
var live = caddy.NewUsagePool()

// kept is a collector in the pool.
type kept struct{ c prometheus.Collector }

// Destruct implements caddy.Destructor (never called: entries stay).
func (kept) Destruct() error { return nil }

// Register returns the collector the process already holds under c's
// description (c itself the first time), registered in reg. A different
// collector under the same name in reg is an error.
func Register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	key := describe(c)
	v, _, err := live.LoadOrNew(key, func() (caddy.Destructor, error) { return kept{c: c}, nil })
	if err != nil {
		return c, err
	}
	if shared, ok := v.(kept).c.(T); ok {
		c = shared
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(T); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

// describe is the sorted descriptions of c: its names, help, labels.
func describe(c prometheus.Collector) string {
	ch := make(chan *prometheus.Desc, 8)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	var descs []string
	for d := range ch {
		descs = append(descs, d.String())
	}
	sort.Strings(descs)
	return strings.Join(descs, "\n")
}
