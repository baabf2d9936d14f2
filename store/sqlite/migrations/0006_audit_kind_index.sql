-- caphub SQLite schema, version 6.
--
-- The audit kind index leaves out invocation events. Every call the
-- gateway relays appends one, and each index of audit_events costs the
-- audit writer an insertion per event (the three of version 4 were about
-- a third of its CPU per event). Invocations are the bulk of a chain, so
-- a listing of them reads the table in seq order (the primary key) or the
-- capability index, while a listing of any other kind keeps an index that
-- now holds only the rare kinds. ListAudit adds the index's condition,
-- kind <> 'invocation', to the query of any other kind: SQLite uses a
-- partial index only for a query whose terms hold its condition.

DROP INDEX audit_events_kind;
CREATE INDEX audit_events_kind_other ON audit_events (kind, seq) WHERE kind <> 'invocation';
