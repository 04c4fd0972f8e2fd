-- A press counts only on the message its button was drawn on, still showing what it showed when
-- Telegram returned it (docs/CONTRACT-NOTES.md, "Telegram and the consent loop"): the messages that
-- carry buttons, each with the hash of its text,
-- entities and keyboard, and the callback data of its buttons. A message loses its row when an
-- edit takes its buttons away, or once it is older than any button that could still count.
CREATE TABLE drawn_messages (
    chat_id     INTEGER NOT NULL,
    message_id  INTEGER NOT NULL,
    shows       TEXT NOT NULL CHECK (length(shows) = 64),
    buttons     TEXT NOT NULL,   -- a JSON array of the callback data, in order
    drawn_at    TEXT NOT NULL,
    PRIMARY KEY (chat_id, message_id)
) WITHOUT ROWID;

-- The monotonic clock when a card was shown: its window is also measured on it (within one boot),
-- so stepping the wall clock back does not stretch it.
ALTER TABLE records ADD COLUMN shown_boot TEXT;
ALTER TABLE records ADD COLUMN shown_since_boot_ms INTEGER;

-- The record whose no started a kind's silence: a Resume lifts only the silence it was drawn for.
ALTER TABLE kind_streaks ADD COLUMN silenced_by TEXT;

-- A yes the daemon could not claim before the card's ttl ran out (it stopped in between) ends
-- expired at the claim, never run late.
INSERT INTO state_transitions (from_state, to_state) VALUES ('granted', 'expired');
