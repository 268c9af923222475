package httpapi

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/civicgate/civicgate/backend/store"
)

// storeCollector reports the database pools and the read routing when scraped (docs/read-replicas.md): nothing
// is counted on the request path beyond what pgxpool and store.Replicas already count.
type storeCollector struct {
	st *store.Store

	acquired, idle, total, max                            *prometheus.Desc
	acquires, emptyAcquires, emptyWait, canceled          *prometheus.Desc
	replicaState, replicaLag, replicaReads, replicaErrors *prometheus.Desc
	primaryReads                                          *prometheus.Desc
}

// replicaStates are the values of the state label: every state store.Replicas can report, so that a replica's
// series is 1 for its state and 0 for the others.
var replicaStates = []string{store.StateUnchecked, store.StateOK, store.StateLagging, store.StateDown, store.StateNotStandby}

func newStoreCollector(st *store.Store) *storeCollector {
	pool := []string{"pool"}
	rep := []string{"replica"}
	return &storeCollector{
		st:            st,
		acquired:      prometheus.NewDesc("recordsd_db_pool_acquired_conns", "Connections currently checked out of the pool.", pool, nil),
		idle:          prometheus.NewDesc("recordsd_db_pool_idle_conns", "Idle connections in the pool.", pool, nil),
		total:         prometheus.NewDesc("recordsd_db_pool_total_conns", "Connections in the pool (acquired, idle and being opened).", pool, nil),
		max:           prometheus.NewDesc("recordsd_db_pool_max_conns", "The pool's maximum size (pool_max_conns).", pool, nil),
		acquires:      prometheus.NewDesc("recordsd_db_pool_acquires_total", "Successful connection acquisitions.", pool, nil),
		emptyAcquires: prometheus.NewDesc("recordsd_db_pool_empty_acquires_total", "Acquisitions that had to wait: no idle connection was ready.", pool, nil),
		emptyWait:     prometheus.NewDesc("recordsd_db_pool_empty_acquire_wait_seconds_total", "Time spent waiting by acquisitions that found no idle connection.", pool, nil),
		canceled:      prometheus.NewDesc("recordsd_db_pool_canceled_acquires_total", "Acquisitions abandoned because the request's context ended.", pool, nil),
		replicaState:  prometheus.NewDesc("recordsd_db_replica_state", "1 for the read replica's current state (unchecked, ok, lagging, down, not-standby), 0 for the others.", []string{"replica", "state"}, nil),
		replicaLag:    prometheus.NewDesc("recordsd_db_replica_lag_seconds", "Replay lag measured by the replica's last answered check.", rep, nil),
		replicaReads:  prometheus.NewDesc("recordsd_db_replica_reads_total", "Reads routed to the replica.", rep, nil),
		replicaErrors: prometheus.NewDesc("recordsd_db_replica_read_errors_total", "Reads that failed on the replica and were run again on the primary.", rep, nil),
		primaryReads:  prometheus.NewDesc("recordsd_db_reads_on_primary_total", "Reads sent to the primary with replicas configured, by reason (no_usable_replica, retried, behind_feed).", []string{"reason"}, nil),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.acquired, c.idle, c.total, c.max, c.acquires, c.emptyAcquires, c.emptyWait,
		c.canceled, c.replicaState, c.replicaLag, c.replicaReads, c.replicaErrors, c.primaryReads} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	if c.st == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	for _, p := range c.st.PoolStats() {
		s := p.Stat
		gauge(c.acquired, float64(s.AcquiredConns()), p.Name)
		gauge(c.idle, float64(s.IdleConns()), p.Name)
		gauge(c.total, float64(s.TotalConns()), p.Name)
		gauge(c.max, float64(s.MaxConns()), p.Name)
		counter(c.acquires, float64(s.AcquireCount()), p.Name)
		counter(c.emptyAcquires, float64(s.EmptyAcquireCount()), p.Name)
		counter(c.emptyWait, s.EmptyAcquireWaitTime().Seconds(), p.Name)
		counter(c.canceled, float64(s.CanceledAcquireCount()), p.Name)
	}
	rs, ok := c.st.ReadStats()
	if !ok {
		return
	}
	for _, r := range rs.Replicas {
		for _, state := range replicaStates {
			v := 0.0
			if r.State == state {
				v = 1
			}
			gauge(c.replicaState, v, r.Name, state)
		}
		gauge(c.replicaLag, r.Lag.Seconds(), r.Name)
		counter(c.replicaReads, float64(r.Reads), r.Name)
		counter(c.replicaErrors, float64(r.ReadErrors), r.Name)
	}
	counter(c.primaryReads, float64(rs.OnPrimary), "no_usable_replica")
	counter(c.primaryReads, float64(rs.RetriedOnPrimary), "retried")
	counter(c.primaryReads, float64(rs.BehindFeed), "behind_feed")
}
