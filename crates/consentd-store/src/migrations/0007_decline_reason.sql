-- The owner's chat.
--
-- A No may carry a reason: the owner's reply to the declined card, within
-- limits.decline_reason_wait, reaches the session as the `message` of its final line and stays
-- on the record for `status`. Only its SHA-256 is journaled.
ALTER TABLE records ADD COLUMN decline_reason TEXT;
ALTER TABLE records ADD COLUMN decline_reason_at TEXT;

-- A reply names the card it answers by the card's message id.
CREATE INDEX record_messages_cards ON record_messages (message_id) WHERE role = 'card';

-- An edit row may name the message it edits (a message whose buttons went stale: a stopped
-- mandate's Stop, a used Resume, a /categories switch) instead of a record's card. An edit
-- without text only takes the message's buttons away.
ALTER TABLE outbox ADD COLUMN message_id INTEGER;
