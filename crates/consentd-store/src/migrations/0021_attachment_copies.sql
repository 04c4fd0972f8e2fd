-- Whether the store keeps a record's attachment copies (`attachments/<sha256>`): set while the
-- record is open or running, and for `[limits] attachment_retention` after it ran; cleared in
-- the transaction that ends a record that never ran (declined, expired, refused, withdrawn),
-- and by the retention sweep. A copy no record keeps is removed after the commit, or at the
-- next start when a crash came between. The `attachments` rows (each copy's hash and size)
-- stay, so the journal and the records still say what was shown.
ALTER TABLE records ADD COLUMN copies_kept INTEGER NOT NULL DEFAULT 1;
UPDATE records SET copies_kept = 0 WHERE state IN ('declined', 'expired', 'refused', 'withdrawn');
-- The retention sweep finds the records that ran and still keep their copies by when they ended.
CREATE INDEX records_copies_kept ON records (finished_at)
    WHERE copies_kept = 1 AND state IN ('executed', 'failed', 'outcome_unknown', 'approved');
-- Whether any record still keeps a copy, asked by hash when one may go.
CREATE INDEX attachments_by_sha256 ON attachments (sha256);
-- A uid's open asks and the copies its records keep, counted at each of its asks: bounded by
-- what is open or kept, never by the uid's whole history.
CREATE INDEX records_open_by_peer ON records (peer_uid) WHERE state IN ('pending', 'card_shown');
CREATE INDEX records_keeping ON records (peer_uid) WHERE copies_kept = 1;
