-- The family of sealing keys the journal last announced (a `seal_started` or `seal_rotated`
-- line): its key id, written in the same transaction as that line. A key file whose id differs
-- has not been announced yet, and its first line announces it (docs/adr/0004-journal-seals.md).
CREATE TABLE journal_seal (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    key_id TEXT NOT NULL
);
