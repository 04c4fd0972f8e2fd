-- The counts of refusals the refusal budget counted rather than recorded one by one: one row per
-- window that closed with repeats, beside its `denied_repeats` journal line, so the owner's
-- evening summary counts every refused ask of the day, not only the recorded ones.
CREATE TABLE refusal_repeats (
    closed_at TEXT NOT NULL,
    uid INTEGER NOT NULL,
    kind TEXT,
    reason TEXT NOT NULL,
    count INTEGER NOT NULL CHECK (count > 0)
);
CREATE INDEX refusal_repeats_by_time ON refusal_repeats (closed_at);
