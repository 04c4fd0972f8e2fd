-- "No, and say why…" is its own button; a plain No answers the session at once.
--
-- A record declined with "No, and say why…" keeps until when its final line waits for the
-- owner's reply with the reason: its No's time plus limits.decline_reason_wait, fixed at the
-- press. NULL: a plain No (or one from before this button), whose line went at once and which
-- takes no reason.
ALTER TABLE records ADD COLUMN reason_until TEXT;
