-- The owner's "Raise today" on a receipt (consentd-core's `raise`): a mandate's limits lifted
-- for the rest of one local day, at most once a day per mandate (the primary key is that
-- compare-and-set). The mandate's own terms stay as granted; coverage reads the day's row
-- beside them, and the next day has none. `day_start` is the local day's first instant, UTC.
CREATE TABLE mandate_raises (
    mandate_id      TEXT NOT NULL REFERENCES mandates (id),
    day_start       TEXT NOT NULL,
    actions_per_day INTEGER NOT NULL CHECK (actions_per_day BETWEEN 1 AND 100),
    usd_per_day     TEXT NOT NULL,           -- dollars with two decimals; "0.00": no money term
    record_id       TEXT NOT NULL REFERENCES records (id),
    raised_at       TEXT NOT NULL,
    raised_by       INTEGER NOT NULL,
    PRIMARY KEY (mandate_id, day_start)
) WITHOUT ROWID;
