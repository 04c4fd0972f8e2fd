-- What a mandate's day was as of each ask it answered, that ask included: its count and its
-- money, taken in the claim's transaction (the same numbers as its `mandate_use` journal line).
-- The receipt, drawn when the run ends, shows these, not the day as later asks made it: three
-- covered asks at once each show their own "1 of N", "2 of N", "3 of N". NULL on an action no
-- mandate answered, and on one claimed before this migration.
ALTER TABLE records ADD COLUMN mandate_actions_today INTEGER
    CHECK (mandate_actions_today IS NULL OR mandate_actions_today >= 1);
ALTER TABLE records ADD COLUMN mandate_usd_today TEXT;  -- dollars with two decimals
