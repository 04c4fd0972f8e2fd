-- Every mandate of a kind, open or not: the open mandates of a kind share one day's ceilings,
-- counted over the uses of all its mandates that day (a mandate stopped this morning still
-- spent what it spent), found by kind at each ask a mandate may cover.
CREATE INDEX mandates_by_kind ON mandates (kind);
