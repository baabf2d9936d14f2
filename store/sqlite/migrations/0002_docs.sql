-- caphub SQLite schema, version 2.
--
-- docs holds JSON documents beside the capabilities (registry.DocStore):
-- saved MCP servers, agents, tokens, native state. Kind groups documents,
-- key is unique within a kind; both compare byte-wise (BINARY), so the
-- primary key's index serves ListDocs' prefix range scans (key >= prefix
-- AND key < its successor) in byte order.
--
-- value is the JSON text exactly as given, returned byte for byte. The
-- store checks it with encoding/json before writing; there is no
-- json_valid() CHECK, because SQLite refuses nesting deeper than 1000 that
-- encoding/json and the PostgreSQL store accept, and both stores must keep
-- the same documents.

CREATE TABLE docs (
    kind       TEXT NOT NULL COLLATE BINARY,
    key        TEXT NOT NULL COLLATE BINARY,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL, -- UTC, 2006-01-02T15:04:05.000000Z
    PRIMARY KEY (kind, key)
);
