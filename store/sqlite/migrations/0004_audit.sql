-- caphub SQLite schema, version 4.
--
-- audit_events is the audit chain (registry.AuditStore, package audit): one
-- row per event, numbered by seq from 1 without gaps. seq is the rowid
-- (INTEGER PRIMARY KEY), so it is unique and the table is stored in seq
-- order. Each row's hash covers its other columns and prev_hash, the hash
-- of the row before it; package audit computes and checks them, the store
-- only keeps them. Appends read the last row and insert the next one in one
-- BEGIN IMMEDIATE transaction, so the chain cannot fork.
--
-- data is the event's canonical JSON text exactly as given (TEXT, returned
-- byte for byte: the hash covers those bytes). kind and capability compare
-- byte-wise (BINARY), so ListAudit's "any version of a capability" range
-- (capability >= 'uri@' AND capability < 'uri' || 'A') is in byte order and
-- the index serves it.

CREATE TABLE audit_events (
    seq        INTEGER PRIMARY KEY CHECK (seq > 0),
    time       TEXT NOT NULL, -- UTC, 2006-01-02T15:04:05.000000Z
    kind       TEXT NOT NULL COLLATE BINARY,
    actor      TEXT NOT NULL,
    capability TEXT NOT NULL COLLATE BINARY,
    data       TEXT NOT NULL,
    prev_hash  TEXT NOT NULL,
    hash       TEXT NOT NULL
);

CREATE INDEX audit_events_time ON audit_events (time);
CREATE INDEX audit_events_capability ON audit_events (capability, seq);
CREATE INDEX audit_events_kind ON audit_events (kind, seq);
