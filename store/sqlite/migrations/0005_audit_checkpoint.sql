-- caphub SQLite schema, version 5.
--
-- audit_checkpoint is where the audit chain was last cut by its retention
-- (chain.Checkpoint): events 1 to seq were removed, and the first event
-- kept links to hash. It has at most one row (id = 1), written in the
-- prune's transaction together with the delete and with the "pruned" event
-- that records the cut in the chain (event record), so verification starts
-- here and a checkpoint that does not match its record shows as a break.

CREATE TABLE audit_checkpoint (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    seq    INTEGER NOT NULL CHECK (seq > 0),
    hash   TEXT NOT NULL,
    time   TEXT NOT NULL, -- UTC, 2006-01-02T15:04:05.000000Z, as audit_events.time
    pruned INTEGER NOT NULL,
    at     TEXT NOT NULL,
    record INTEGER NOT NULL
);
