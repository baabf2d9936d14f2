-- caphub PostgreSQL schema, version 2. Objects are created in the current
-- schema (the first of search_path).
--
-- docs holds JSON documents beside the capabilities (registry.DocStore):
-- saved MCP servers, agents, tokens, native state. Kind groups documents,
-- key is unique within a kind; both compare byte-wise (COLLATE "C", the
-- order of SQLite's BINARY), so the primary key's index serves ListDocs'
-- prefix range scans (key >= prefix AND key < its successor) in byte order.
--
-- value is json, not jsonb: kept exactly as written and returned byte for
-- byte (jsonb would reorder keys, drop duplicates and whitespace, and refuse
-- \u0000 escapes).

CREATE TABLE docs (
    kind       TEXT COLLATE "C" NOT NULL,
    key        TEXT COLLATE "C" NOT NULL,
    value      JSON NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT docs_pkey PRIMARY KEY (kind, key)
);
