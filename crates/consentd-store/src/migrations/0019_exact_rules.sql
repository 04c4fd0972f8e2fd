-- Exact rules ("Always here"). A hook's gate ask names its call (agent, tool, working
-- directory) beside its action; the record keeps it, so an Always press saves what its card
-- showed. A rule answers only that call's byte-exact text (by its SHA-256) for the uid that
-- asked; the text itself is kept here, in the daemon's own database, for /rules alone (the
-- journal names it by its hash). Each use is a row, which the evening summary counts.
ALTER TABLE records ADD COLUMN hook_agent TEXT;
ALTER TABLE records ADD COLUMN hook_tool TEXT;
ALTER TABLE records ADD COLUMN hook_cwd TEXT;

CREATE TABLE exact_rules (
    id TEXT PRIMARY KEY,
    peer_uid INTEGER NOT NULL,
    agent TEXT NOT NULL,
    tool TEXT NOT NULL,
    cwd TEXT NOT NULL,
    command TEXT NOT NULL,
    command_sha256 TEXT NOT NULL,
    kind TEXT NOT NULL,
    record_id TEXT NOT NULL REFERENCES records (id),
    saved_at TEXT NOT NULL,
    uses INTEGER NOT NULL DEFAULT 0,
    last_used_at TEXT,
    removed_at TEXT
);

-- At most one live rule per exact call and kind: the lookup a hook makes on each gated call.
CREATE UNIQUE INDEX exact_rules_live
    ON exact_rules (peer_uid, agent, tool, cwd, command_sha256, kind) WHERE removed_at IS NULL;

CREATE TABLE exact_rule_uses (
    rule_id TEXT NOT NULL REFERENCES exact_rules (id),
    used_at TEXT NOT NULL
);
CREATE INDEX exact_rule_uses_by_time ON exact_rule_uses (used_at);
