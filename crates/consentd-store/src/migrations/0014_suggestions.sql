-- Suggested mandates: offered to the owner after their yeses to the same kind and target
-- (consentd_core::suggest). A suggestion holds the exact mandate request its button opens, so
-- the button is signed for that request's digest and a press can open nothing else.
CREATE TABLE suggestions (
    id              TEXT PRIMARY KEY CHECK (id GLOB 'm_[0-9a-f]*' AND length(id) = 22),
    kind            TEXT NOT NULL,
    -- NULL for a kind without a target.
    target          TEXT,
    -- The uid whose asks the yeses answered: the mandate request is made in its name.
    peer_uid        INTEGER NOT NULL,
    days            INTEGER NOT NULL,
    usd_per_day     TEXT,
    actions_per_day INTEGER NOT NULL,
    reason          TEXT NOT NULL,
    digest          TEXT NOT NULL,
    approvals       INTEGER NOT NULL,
    created_at      TEXT NOT NULL,
    -- Set once, by the owner's press, with the id of the mandate request it opened.
    opened_at       TEXT,
    mandate_id      TEXT
);
CREATE INDEX suggestions_by_subject ON suggestions (kind, target, created_at);
CREATE INDEX suggestions_by_time ON suggestions (created_at);
CREATE INDEX suggestions_by_mandate ON suggestions (mandate_id) WHERE mandate_id IS NOT NULL;

-- The owner's yeses of a kind and target, read after each card's run ends: without it the read
-- would walk every record of the uid, which are never deleted.
CREATE INDEX records_yeses ON records (kind, target, created_at)
    WHERE decided_by IS NOT NULL AND mandate_id IS NULL;
