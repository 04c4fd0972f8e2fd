-- A stranger's window of rejected presses, per reason code: the first press of a
-- window is journaled (and told to the owner), the rest are counted here and journaled as one
-- line with their count once the window has closed.
CREATE TABLE stranger_presses (
    user_id   INTEGER NOT NULL,
    reason    TEXT NOT NULL,
    opened_at TEXT NOT NULL,
    held      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, reason)
);
