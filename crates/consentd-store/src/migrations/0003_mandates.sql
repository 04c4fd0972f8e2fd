-- Mandates (docs/PROTOCOL.md, "Mandates"): the owner's standing permissions.
--
-- A mandate request is a record like an ask (subject 'mandate'): it gets a card, a ttl, decline
-- memory by its digest, and ends granted, declined or expired. Its terms live in `mandates`,
-- keyed by that record's id, which is also the mandate's id. Once granted the row carries when it
-- opened and ends, and later when the owner stopped it or its term ran out.

CREATE TABLE mandates (
    id              TEXT PRIMARY KEY REFERENCES records (id),
    kind            TEXT NOT NULL,
    targets         TEXT NOT NULL,           -- JSON array of strings, in the order asked
    days            INTEGER NOT NULL CHECK (days BETWEEN 1 AND 7),
    usd_per_day     TEXT NOT NULL,           -- dollars with two decimals
    actions_per_day INTEGER NOT NULL CHECK (actions_per_day BETWEEN 1 AND 100),
    reason          TEXT,
    opened_at       TEXT,
    ends_at         TEXT,
    stopped_at      TEXT,
    stopped_by      INTEGER,
    ended_at        TEXT
) WITHOUT ROWID;

ALTER TABLE records ADD COLUMN subject TEXT NOT NULL DEFAULT 'action'
    CHECK (subject IN ('action', 'mandate'));
-- The mandate that answered an ask instead of a card. Its usage is counted from these records,
-- so the count and the claim are one row and can never disagree.
ALTER TABLE records ADD COLUMN mandate_id TEXT REFERENCES mandates (id);

-- The open mandates of a kind, found at every ask.
CREATE INDEX mandates_open ON mandates (kind)
    WHERE opened_at IS NOT NULL AND stopped_at IS NULL AND ended_at IS NULL;
-- A mandate's uses, counted per day.
CREATE INDEX records_by_mandate ON records (mandate_id, created_at) WHERE mandate_id IS NOT NULL;

-- A granted mandate request is final: it opens the mandate and is never claimed or run.
CREATE TRIGGER mandate_requests_never_run
BEFORE UPDATE OF state ON records
WHEN OLD.subject = 'mandate' AND NEW.state IN ('running', 'executed', 'failed', 'outcome_unknown')
BEGIN
    SELECT RAISE(ABORT, 'a mandate request is never run');
END;
