-- caphub PostgreSQL schema, version 6.
--
-- audit_checkpoint is where the audit chain was last cut by its retention
-- (chain.Checkpoint): events 1 to seq were removed, and the first event
-- kept links to hash. It has at most one row (id = 1), written in the
-- prune's transaction, under the chain's advisory lock, together with the
-- delete and with the "pruned" event that records the cut in the chain
-- (event record), so verification starts here and a checkpoint that does
-- not match its record shows as a break.

CREATE TABLE audit_checkpoint (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    seq    BIGINT NOT NULL CHECK (seq > 0),
    hash   TEXT NOT NULL,
    time   TIMESTAMPTZ NOT NULL,
    pruned BIGINT NOT NULL,
    at     TIMESTAMPTZ NOT NULL,
    record BIGINT NOT NULL
);
