-- Decline memory and a kind's streak of no's are kept per peer uid (docs/OPERATOR.md, "In the
-- chat"): the owner answers
-- a session, so one session's no's never refuse another's asks. Each row the old tables held
-- goes to the uid whose declined record it came from: a remembered digest to every uid that had
-- it declined, a streak to the uid of the record that silenced it, or else of its kind's latest
-- declined record. A streak no declined record explains (none is left) is dropped.
CREATE TABLE declines_per_uid (
    peer_uid    INTEGER NOT NULL,
    digest      TEXT NOT NULL,
    declined_at TEXT NOT NULL,
    PRIMARY KEY (peer_uid, digest)
) WITHOUT ROWID;
INSERT INTO declines_per_uid (peer_uid, digest, declined_at)
    SELECT DISTINCT r.peer_uid, d.digest, d.declined_at
    FROM declines d JOIN records r ON r.digest = d.digest AND r.state = 'declined';
DROP TABLE declines;
ALTER TABLE declines_per_uid RENAME TO declines;

CREATE TABLE kind_streaks_per_uid (
    peer_uid       INTEGER NOT NULL,
    kind           TEXT NOT NULL,
    streak         INTEGER NOT NULL,
    silenced_until TEXT,
    -- The record whose no started the silence: its Resume lifts this uid's silence only.
    silenced_by    TEXT,
    PRIMARY KEY (peer_uid, kind)
) WITHOUT ROWID;
INSERT INTO kind_streaks_per_uid (peer_uid, kind, streak, silenced_until, silenced_by)
    SELECT uid, kind, streak, silenced_until, silenced_by FROM (
        SELECT k.kind, k.streak, k.silenced_until, k.silenced_by,
               coalesce(
                   (SELECT peer_uid FROM records WHERE id = k.silenced_by),
                   (SELECT peer_uid FROM records
                    WHERE kind = k.kind AND state = 'declined' ORDER BY seq DESC LIMIT 1)
               ) AS uid
        FROM kind_streaks k
    ) WHERE uid IS NOT NULL;
DROP TABLE kind_streaks;
ALTER TABLE kind_streaks_per_uid RENAME TO kind_streaks;
