-- A session may withdraw its open ask (`withdrawn`), an approval-only category's yes ends its
-- record `approved` (consentd runs nothing), an ask may carry an `origin` line shown on its
-- card, and its own `ttl` (kept as the pending record's
-- `expires_at`, the deadline it is never shown past).
--
-- The state machine gains four steps, and `records.state` its two new values. The column's
-- CHECK is part of the table's definition, which SQLite cannot alter: the table is rebuilt, as
-- SQLite's documentation describes (a new table, the rows copied, the old one dropped, the new
-- one renamed, its indexes and triggers made again). The migration runs with foreign keys off
-- (`migrate`), so dropping the old table cascades to nothing; every id is copied unchanged, so
-- every reference to a record still finds it.

INSERT INTO state_transitions (from_state, to_state) VALUES
    ('pending', 'withdrawn'),
    ('card_shown', 'withdrawn'),
    ('pending', 'approved'),
    ('card_shown', 'approved');

CREATE TABLE records_new (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    peer_uid        INTEGER NOT NULL,
    kind            TEXT,
    target          TEXT,
    text            TEXT,
    fields          TEXT NOT NULL DEFAULT '{}',
    cost_usd        TEXT,
    digest          TEXT,
    idempotency_key TEXT,
    urgent          INTEGER NOT NULL DEFAULT 0,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'card_shown', 'granted', 'declined',
                        'expired', 'refused', 'running', 'executed', 'failed', 'outcome_unknown',
                        'withdrawn', 'approved')),
    reason          TEXT,
    message         TEXT,
    result          TEXT,
    created_at      TEXT NOT NULL,
    shown_at        TEXT,
    expires_at      TEXT,
    decided_at      TEXT,
    decided_by      INTEGER,
    finished_at     TEXT,
    stderr          TEXT,
    subject         TEXT NOT NULL DEFAULT 'action' CHECK (subject IN ('action', 'mandate')),
    mandate_id      TEXT REFERENCES mandates (id),
    decided_by_name TEXT,
    shown_boot      TEXT,
    shown_since_boot_ms INTEGER,
    mandate_actions_today INTEGER
        CHECK (mandate_actions_today IS NULL OR mandate_actions_today >= 1),
    mandate_usd_today TEXT,
    decline_reason  TEXT,
    decline_reason_at TEXT,
    -- The client's one line on where the ask comes from; NULL when it sent none.
    origin          TEXT
);

INSERT INTO records_new (seq, id, peer_uid, kind, target, text, fields, cost_usd, digest,
        idempotency_key, urgent, state, reason, message, result, created_at, shown_at,
        expires_at, decided_at, decided_by, finished_at, stderr, subject, mandate_id,
        decided_by_name, shown_boot, shown_since_boot_ms, mandate_actions_today,
        mandate_usd_today, decline_reason, decline_reason_at)
    SELECT seq, id, peer_uid, kind, target, text, fields, cost_usd, digest,
        idempotency_key, urgent, state, reason, message, result, created_at, shown_at,
        expires_at, decided_at, decided_by, finished_at, stderr, subject, mandate_id,
        decided_by_name, shown_boot, shown_since_boot_ms, mandate_actions_today,
        mandate_usd_today, decline_reason, decline_reason_at
    FROM records;

DROP TABLE records;
ALTER TABLE records_new RENAME TO records;

-- The indexes and triggers of 0001, 0003 and 0004, as they were.
CREATE UNIQUE INDEX records_idempotency ON records (peer_uid, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX records_open ON records (digest) WHERE state IN ('pending', 'card_shown');
CREATE INDEX records_by_peer ON records (peer_uid, seq);
CREATE INDEX records_by_mandate ON records (mandate_id, created_at) WHERE mandate_id IS NOT NULL;
CREATE INDEX records_shown ON records (shown_at) WHERE shown_at IS NOT NULL;

CREATE TRIGGER records_legal_transition
BEFORE UPDATE OF state ON records
WHEN OLD.state <> NEW.state AND NOT EXISTS (
    SELECT 1 FROM state_transitions WHERE from_state = OLD.state AND to_state = NEW.state)
BEGIN
    SELECT RAISE(ABORT, 'illegal record state transition');
END;

-- A granted mandate request is final: it opens the mandate and is never claimed or run, nor
-- approved (approval is an action's end).
CREATE TRIGGER mandate_requests_never_run
BEFORE UPDATE OF state ON records
WHEN OLD.subject = 'mandate'
    AND NEW.state IN ('running', 'executed', 'failed', 'outcome_unknown', 'approved')
BEGIN
    SELECT RAISE(ABORT, 'a mandate request is never run');
END;
