-- The console's mail outbox (docs/design.md D74): mails waiting to be sent, claimed by one gateway at a time
-- (FOR UPDATE SKIP LOCKED) and marked sent in the transaction that claimed them. A sent or abandoned row keeps
-- no body (a body may hold a single-use link); rows are removed a week after they end.
CREATE TABLE civicgate.mail_outbox (
	id              bigserial PRIMARY KEY,
	kind            text NOT NULL,
	to_addr         text NOT NULL,
	subject         text NOT NULL,
	text_body       text NOT NULL,
	html_body       text NOT NULL,
	created_at      timestamptz NOT NULL DEFAULT now(),
	attempts        int NOT NULL DEFAULT 0,
	next_attempt_at timestamptz NOT NULL DEFAULT now(),
	last_error      text NOT NULL DEFAULT '',
	sent_at         timestamptz,
	abandoned_at    timestamptz
);
CREATE INDEX mail_outbox_due ON civicgate.mail_outbox (next_attempt_at) WHERE sent_at IS NULL AND abandoned_at IS NULL;
