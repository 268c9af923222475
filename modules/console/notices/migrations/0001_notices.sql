-- Notice mails (docs/design.md D82): one row per (kind, organization, subject) mailed to the organization's
-- admins, written in the transaction that enqueues the mails, so each notice is mailed once however many
-- gateways run the round. Rows are kept: once is forever (a key's subject carries its expiry).
CREATE TABLE civicgate.mail_notices (
	kind       text NOT NULL,
	org_id     text NOT NULL,
	subject    text NOT NULL,
	recipients int NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (kind, org_id, subject)
);
