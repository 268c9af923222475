package subslots

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// heartbeat extends the leases held every Refresh until Close.
func (s *Store) heartbeat() {
	defer close(s.done)
	t := time.NewTicker(s.cfg.Refresh)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), s.refreshTimeout())
			_ = s.refresh(ctx) // reported by refresh
			cancel()
		}
	}
}

// refreshTimeout bounds one heartbeat: within the interval, at most 5 s.
func (s *Store) refreshTimeout() time.Duration {
	return min(s.cfg.Refresh, 5*time.Second)
}

// refresh sets the expiry of every lease held to now + TTL in one pipeline
// (one script call per key and 500 leases), then removes again the leases
// released while it ran, which it may have written back.
func (s *Store) refresh(ctx context.Context) error {
	s.mu.Lock()
	snapshot := make(map[string][]string, len(s.held))
	for set, members := range s.held {
		list := make([]string, 0, len(members))
		for m := range members {
			list = append(list, m)
		}
		snapshot[set] = list
	}
	s.mu.Unlock()
	if len(snapshot) == 0 {
		return nil
	}
	ttl := s.cfg.TTL.Milliseconds()
	_, err := s.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for set, members := range snapshot {
			for len(members) > 0 {
				n := min(len(members), refreshChunk)
				args := make([]any, 0, n+1)
				args = append(args, ttl)
				for _, m := range members[:n] {
					args = append(args, m)
				}
				refreshScript.Eval(ctx, p, []string{set}, args...)
				members = members[n:]
			}
		}
		return nil
	})
	if err != nil {
		s.failed(err, "refresh")
		return err
	}
	return s.removeReleased(ctx, snapshot)
}

// removeReleased removes the leases of snapshot no longer held: released
// after the snapshot, their ZREM may have run before the refresh wrote them.
func (s *Store) removeReleased(ctx context.Context, snapshot map[string][]string) error {
	gone := make(map[string][]any)
	s.mu.Lock()
	for set, members := range snapshot {
		for _, m := range members {
			if _, ok := s.held[set][m]; !ok {
				gone[set] = append(gone[set], m)
			}
		}
	}
	s.mu.Unlock()
	if len(gone) == 0 {
		return nil
	}
	_, err := s.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for set, members := range gone {
			p.ZRem(ctx, set, members...)
		}
		return nil
	})
	if err != nil {
		s.failed(err, "refresh")
	}
	return err
}
