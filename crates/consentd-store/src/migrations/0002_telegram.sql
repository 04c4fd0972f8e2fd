-- The consent loop over Telegram: the owner, pairing, the durable polling offset, the outbox,
-- the messages of each record, and what a run left behind.

-- The paired owner. A `telegram_id` in the config takes precedence over this row.
CREATE TABLE owner (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    telegram_id   INTEGER NOT NULL,
    language_code TEXT,
    set_at        TEXT NOT NULL
);

-- One pairing code at a time (only its hash), and the wrong-code counter.
CREATE TABLE pairing (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    code_hash    TEXT,
    expires_at   TEXT,
    used         INTEGER NOT NULL DEFAULT 0,
    failures     INTEGER NOT NULL DEFAULT 0,
    locked_until TEXT
);

-- The next getUpdates offset, written in the same transaction as what an update changed, so an
-- update handled twice changes nothing twice.
CREATE TABLE telegram_state (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    next_offset INTEGER NOT NULL
);

-- Everything consentd sends, in order, sent by one sender. `card` rows are drawn when sent (the
-- card's ttl starts then); `message` and `edit` rows carry their text.
CREATE TABLE outbox (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    chat_id    INTEGER NOT NULL,
    what       TEXT NOT NULL CHECK (what IN ('card', 'message', 'edit')),
    record_id  TEXT REFERENCES records (id),
    body       TEXT NOT NULL DEFAULT '{}',
    silent     INTEGER NOT NULL DEFAULT 0,
    state      TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'sent', 'dropped')),
    attempts   INTEGER NOT NULL DEFAULT 0,
    error      TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX outbox_queued ON outbox (seq) WHERE state = 'queued';

-- The chat messages of a record: its text parts, attachments and the card, for edits.
CREATE TABLE record_messages (
    record_id  TEXT NOT NULL REFERENCES records (id),
    role       TEXT NOT NULL,
    message_id INTEGER NOT NULL,
    PRIMARY KEY (record_id, role)
) WITHOUT ROWID;

-- When a stranger last got the one polite line, so they get it at most once an hour.
CREATE TABLE stranger_replies (
    user_id INTEGER PRIMARY KEY,
    last_at TEXT NOT NULL
) WITHOUT ROWID;

-- A run's stderr, kept privately for the operator (bounded by the executor).
ALTER TABLE records ADD COLUMN stderr TEXT;
