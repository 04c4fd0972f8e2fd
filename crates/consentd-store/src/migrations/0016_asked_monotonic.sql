-- The monotonic clock as a record was asked (its boot, and milliseconds since it): a deadline
-- that starts at the ask (its own ttl while it waits unshown; a mandate's term, fixed when it
-- was asked) is judged on both clocks, as a card's window is, so a wall clock stepped back
-- stretches none of them. Records asked before this have none: the wall clock decides alone.
ALTER TABLE records ADD COLUMN asked_boot TEXT;
ALTER TABLE records ADD COLUMN asked_since_boot_ms INTEGER;
