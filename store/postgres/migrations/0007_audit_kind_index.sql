-- caphub PostgreSQL schema, version 7. Objects are created in the current
-- schema (the first of search_path).
--
-- The audit kind index leaves out invocation events. Every call the
-- gateway relays appends one, and each index of audit_events costs the
-- audit writer an insertion per event. Invocations are the bulk of a
-- chain, so a listing of them reads the table in seq order (the primary
-- key) or the capability index, while a listing of any other kind keeps an
-- index that now holds only the rare kinds. ListAudit adds the index's
-- condition, kind <> 'invocation', to the query of any other kind, so that
-- a generic plan (a parameter for the kind) can use the partial index too.

DROP INDEX audit_events_kind;
CREATE INDEX audit_events_kind_other ON audit_events (kind, seq) WHERE kind <> 'invocation';
