-- 0104: the W3C traceparent of the span that wrote a change event, so a webhook delivery of the event can
-- link to the sync run that produced it. NULL when the writer was not traced (tracing off, or the run not
-- sampled). Readers that do not know the column are unaffected; writers need not set it.
-- A nullable column without a default is a catalog change only; the check is NOT VALID so adding it does not
-- scan the existing (all NULL) rows, and it still holds for every row written from now on.
ALTER TABLE change_events ADD COLUMN IF NOT EXISTS traceparent text;
ALTER TABLE change_events DROP CONSTRAINT IF EXISTS change_events_traceparent_check;
ALTER TABLE change_events ADD CONSTRAINT change_events_traceparent_check
    CHECK (traceparent IS NULL OR traceparent ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$') NOT VALID;
