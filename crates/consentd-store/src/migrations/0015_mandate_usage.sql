-- A mandate's uses of a day are counted at every ask it might cover; the index now carries
-- each use's cost as well, so the count reads the index alone and never the records' rows.
DROP INDEX records_by_mandate;
CREATE INDEX records_by_mandate ON records (mandate_id, created_at, cost_usd)
    WHERE mandate_id IS NOT NULL;
