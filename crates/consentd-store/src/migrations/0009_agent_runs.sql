-- Whether the record's category was approval-only when it was asked: what its card said (the
-- agent runs it; consentd runs nothing) decides what the owner's Yes does, even when the
-- category's mode changes in the config before the press.
ALTER TABLE records ADD COLUMN agent_runs INTEGER NOT NULL DEFAULT 0 CHECK (agent_runs IN (0, 1));
