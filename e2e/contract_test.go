package e2e

import (
	"testing"

	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// TestChangeFeedContract: the webhooks module copies the records backend's
// change-feed constants instead of importing them (modules never import the
// backend); they must stay equal, or the fan-out would read the feed without
// the writers' lock and miss their notifications.
func TestChangeFeedContract(t *testing.T) {
	if store.FeedLockKey != mirror.EventLockKey {
		t.Errorf("webhooks store.FeedLockKey %d, backend sync.EventLockKey %d", store.FeedLockKey, int64(mirror.EventLockKey))
	}
	if store.FeedChannel != mirror.EventChannel {
		t.Errorf("webhooks store.FeedChannel %q, backend sync.EventChannel %q", store.FeedChannel, mirror.EventChannel)
	}
}
