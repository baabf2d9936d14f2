-- caphub PostgreSQL schema, version 4. Objects are created in the current
-- schema (the first of search_path).
--
-- audit_events is the audit chain (registry.AuditStore, package audit): one
-- row per event, numbered by seq from 1 without gaps. Each row's hash covers
-- its other columns and prev_hash, the hash of the row before it; package
-- audit computes and checks them, the store only keeps them. Appends take a
-- transaction-scoped advisory lock of the schema's chain, read the last row
-- and insert the next one in that transaction, so replicas appending at
-- once queue instead of forking the chain; the primary key on seq refuses a
-- fork even if the lock were bypassed.
--
-- data is json, not jsonb: the event's canonical JSON text kept exactly as
-- written and returned byte for byte (the hash covers those bytes). kind
-- and capability compare byte-wise (COLLATE "C", the order of SQLite's
-- BINARY), so ListAudit's "any version of a capability" range is in byte
-- order and the index serves it.

CREATE TABLE audit_events (
    seq        BIGINT CONSTRAINT audit_events_pkey PRIMARY KEY CHECK (seq > 0),
    time       TIMESTAMPTZ NOT NULL,
    kind       TEXT COLLATE "C" NOT NULL,
    actor      TEXT NOT NULL,
    capability TEXT COLLATE "C" NOT NULL,
    data       JSON NOT NULL,
    prev_hash  TEXT NOT NULL,
    hash       TEXT NOT NULL
);

CREATE INDEX audit_events_time ON audit_events (time);
CREATE INDEX audit_events_capability ON audit_events (capability, seq);
CREATE INDEX audit_events_kind ON audit_events (kind, seq);
