// Package collectors registers Prometheus collectors the way Caddy modules
// need it: a config reload provisions a module again while the previous
// instance's collectors stay registered, so a collector already registered
// under the same description is reused instead of failing the reload.
package collectors

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c in reg, or returns the identical collector registered
// earlier.
func Register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
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
