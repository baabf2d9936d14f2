-- caphub PostgreSQL schema, version 5.
--
-- search_latest is a narrow copy of what ranking reads for the latest
-- version of each capability: its sort columns and search vector. Searches
-- without all-versions and without other filters rank and count from it,
-- reading a few small pages instead of the wide capability rows (which
-- carry the definition), and join capabilities only for the page.

CREATE TABLE search_latest (
    id          BIGINT PRIMARY KEY REFERENCES capabilities (id) ON DELETE CASCADE,
    scheme      TEXT COLLATE "C" NOT NULL,
    domain      TEXT COLLATE "C" NOT NULL,
    name        TEXT COLLATE "C" NOT NULL,
    version_key TEXT COLLATE "C" NOT NULL,
    version     TEXT COLLATE "C" NOT NULL,
    search      TSVECTOR NOT NULL
);
CREATE INDEX search_latest_search ON search_latest USING GIN (search);
CREATE INDEX search_latest_capability ON search_latest (scheme, domain, name);

INSERT INTO search_latest (id, scheme, domain, name, version_key, version, search)
SELECT id, scheme, domain, name, version_key, version, search FROM capabilities WHERE is_latest;
