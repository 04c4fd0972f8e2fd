-- An idempotency key names its action's record. An ask whose key is new but whose action is
-- already open (the same peer, the same digest) joins that record instead of making one, and a
-- record holds one key of its own: the joining ask's key is kept here, naming the record it
-- joined, so that asking again with it finds that record in whatever state it has reached
-- rather than asking anew (and, under a mandate, running the action a second time).
CREATE TABLE joined_keys (
    peer_uid INTEGER NOT NULL,
    idempotency_key TEXT NOT NULL,
    record_id TEXT NOT NULL,
    PRIMARY KEY (peer_uid, idempotency_key)
) WITHOUT ROWID;
