-- The notification gate, the owner's settings and the evening summary (docs/CONFIG.md, `[gate]`).

-- How a row may sound: 'silent', 'gated' (by its class and the quiet hours), 'receipt' or
-- 'urgent'. A card held over tonight's limit waits until `hold_until`; later rows go on.
ALTER TABLE outbox ADD COLUMN sound TEXT NOT NULL DEFAULT 'gated'
    CHECK (sound IN ('silent', 'gated', 'receipt', 'urgent'));
ALTER TABLE outbox ADD COLUMN hold_until TEXT;
UPDATE outbox SET sound = 'silent' WHERE silent = 1;

-- What the owner set in the chat (/quiet, /nightcards, /summary, /lang), over the config.
CREATE TABLE owner_settings (
    key    TEXT PRIMARY KEY CHECK (key IN ('quiet_hours', 'night_card_limit', 'summary_at',
                                           'language')),
    value  TEXT NOT NULL,
    set_at TEXT NOT NULL
) WITHOUT ROWID;

-- One evening summary per local day, written in the transaction that queues it.
CREATE TABLE summaries (
    day     TEXT PRIMARY KEY,        -- the owner's local date, YYYY-MM-DD
    sent_at TEXT NOT NULL,
    anchor  TEXT NOT NULL
) WITHOUT ROWID;

-- Cards shown tonight are counted by when they were shown.
CREATE INDEX records_shown ON records (shown_at) WHERE shown_at IS NOT NULL;

-- The display name of whoever pressed, for the card's later edits ("Decided by Mila"); the id is
-- in decided_by.
ALTER TABLE records ADD COLUMN decided_by_name TEXT;
