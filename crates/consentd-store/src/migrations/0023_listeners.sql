-- Labelled sockets (`[[listen]]`): a peer is a uid through one socket. Each record keeps the
-- origin of the listener it was asked through ('' for the main socket, which every record
-- before this migration was), and the peer's own state is keyed by both: its idempotency keys,
-- the digests it had declined and its streaks of no's. So an ask through one socket never
-- reads, joins, withdraws or is refused by what the same uid asked through another.
ALTER TABLE records ADD COLUMN listener TEXT NOT NULL DEFAULT '';

DROP INDEX records_idempotency;
CREATE UNIQUE INDEX records_idempotency ON records (peer_uid, listener, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
DROP INDEX records_by_peer;
CREATE INDEX records_by_peer ON records (peer_uid, listener, seq);

CREATE TABLE declines_per_peer (
    peer_uid    INTEGER NOT NULL,
    listener    TEXT NOT NULL DEFAULT '',
    digest      TEXT NOT NULL,
    declined_at TEXT NOT NULL,
    PRIMARY KEY (peer_uid, listener, digest)
) WITHOUT ROWID;
INSERT INTO declines_per_peer (peer_uid, digest, declined_at)
    SELECT peer_uid, digest, declined_at FROM declines;
DROP TABLE declines;
ALTER TABLE declines_per_peer RENAME TO declines;

CREATE TABLE kind_streaks_per_peer (
    peer_uid       INTEGER NOT NULL,
    listener       TEXT NOT NULL DEFAULT '',
    kind           TEXT NOT NULL,
    streak         INTEGER NOT NULL,
    silenced_until TEXT,
    silenced_by    TEXT,
    PRIMARY KEY (peer_uid, listener, kind)
) WITHOUT ROWID;
INSERT INTO kind_streaks_per_peer (peer_uid, kind, streak, silenced_until, silenced_by)
    SELECT peer_uid, kind, streak, silenced_until, silenced_by FROM kind_streaks;
DROP TABLE kind_streaks;
ALTER TABLE kind_streaks_per_peer RENAME TO kind_streaks;

CREATE TABLE joined_keys_per_peer (
    peer_uid INTEGER NOT NULL,
    listener TEXT NOT NULL DEFAULT '',
    idempotency_key TEXT NOT NULL,
    record_id TEXT NOT NULL,
    PRIMARY KEY (peer_uid, listener, idempotency_key)
) WITHOUT ROWID;
INSERT INTO joined_keys_per_peer (peer_uid, idempotency_key, record_id)
    SELECT peer_uid, idempotency_key, record_id FROM joined_keys;
DROP TABLE joined_keys;
ALTER TABLE joined_keys_per_peer RENAME TO joined_keys;
