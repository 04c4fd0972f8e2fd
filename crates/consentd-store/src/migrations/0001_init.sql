-- The first schema. Migrations are numbered and applied in order, each in its own transaction;
-- PRAGMA user_version records the last one applied.

-- Every legal step of a record's state machine. A trigger refuses any other UPDATE of a state,
-- so even a bug in the Rust code cannot move a record along an edge that is not here.
CREATE TABLE state_transitions (
    from_state TEXT NOT NULL,
    to_state   TEXT NOT NULL,
    PRIMARY KEY (from_state, to_state)
) WITHOUT ROWID;

INSERT INTO state_transitions (from_state, to_state) VALUES
    ('pending', 'card_shown'),
    ('pending', 'granted'),
    ('pending', 'expired'),
    ('pending', 'refused'),
    ('card_shown', 'granted'),
    ('card_shown', 'declined'),
    ('card_shown', 'expired'),
    ('card_shown', 'refused'),
    ('granted', 'running'),
    ('granted', 'refused'),
    ('running', 'executed'),
    ('running', 'failed'),
    ('running', 'outcome_unknown');

CREATE TABLE records (
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
                        'expired', 'refused', 'running', 'executed', 'failed', 'outcome_unknown')),
    reason          TEXT,
    message         TEXT,
    result          TEXT,
    created_at      TEXT NOT NULL,
    shown_at        TEXT,
    expires_at      TEXT,
    decided_at      TEXT,
    decided_by      INTEGER,
    finished_at     TEXT
);

-- One record per idempotency key and peer: concurrent asks with one key meet here.
CREATE UNIQUE INDEX records_idempotency ON records (peer_uid, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
-- The open asks, found by digest (joining an open card) and counted (max_pending).
CREATE INDEX records_open ON records (digest) WHERE state IN ('pending', 'card_shown');
CREATE INDEX records_by_peer ON records (peer_uid, seq);

CREATE TRIGGER records_legal_transition
BEFORE UPDATE OF state ON records
WHEN OLD.state <> NEW.state AND NOT EXISTS (
    SELECT 1 FROM state_transitions WHERE from_state = OLD.state AND to_state = NEW.state)
BEGIN
    SELECT RAISE(ABORT, 'illegal record state transition');
END;

CREATE TABLE attachments (
    record_id  TEXT NOT NULL REFERENCES records (id) ON DELETE CASCADE,
    position   INTEGER NOT NULL,
    name       TEXT NOT NULL,
    media_type TEXT NOT NULL,
    bytes      INTEGER NOT NULL,
    sha256     TEXT NOT NULL,
    PRIMARY KEY (record_id, position)
) WITHOUT ROWID;

-- A no, remembered by the digest it answered.
CREATE TABLE declines (
    digest      TEXT PRIMARY KEY,
    declined_at TEXT NOT NULL
) WITHOUT ROWID;

-- No's in a row per kind; silenced_until is set when the streak reaches its limit.
CREATE TABLE kind_streaks (
    kind           TEXT PRIMARY KEY,
    streak         INTEGER NOT NULL,
    silenced_until TEXT
) WITHOUT ROWID;

-- The owner's On/Off switch per category, overriding the config's `enabled`.
CREATE TABLE category_switches (
    kind    TEXT PRIMARY KEY,
    enabled INTEGER NOT NULL
) WITHOUT ROWID;

-- Journal lines staged in the same transaction as the change they describe. The store's thread
-- appends them to the journal file after the commit and drops them once the file has them.
CREATE TABLE journal_staged (
    n    INTEGER PRIMARY KEY,
    prev TEXT NOT NULL,
    h    TEXT NOT NULL,
    line TEXT NOT NULL
);

-- The last line staged: the chain continues from here.
CREATE TABLE journal_state (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    last_n INTEGER NOT NULL,
    last_h TEXT NOT NULL
);
