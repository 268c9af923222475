-- civic_webhooks 0003 (docs/security.md "Review of 2026-11", finding 6): every failed attempt's cause (last_error, listed by GET …/deliveries) is one
-- of a documented set (README "Delivery"), never a raw error.
-- Older free-text reasons are mapped onto the set.
UPDATE civicgate.webhook_deliveries SET last_error = CASE
        WHEN last_error LIKE 'refused by the SSRF guard%' THEN 'refused address'
        WHEN last_error LIKE 'network error%' THEN 'connection'
        WHEN last_error ~ '^HTTP [0-9]{3}' THEN 'status ' || substring(last_error FROM '^HTTP ([0-9]{3})')
        WHEN last_error = 'bad URL' THEN 'bad url'
        ELSE last_error END
    WHERE last_error <> '';
