-- civic_webhooks 0002: finished deliveries are pruned after the app's retention (store.Prune).
CREATE INDEX webhook_deliveries_finished ON civicgate.webhook_deliveries (finished_at) WHERE status IN ('delivered', 'failed');
