-- caphub PostgreSQL schema, version 1. Objects are created in the current
-- schema (the first of search_path).
--
-- capabilities holds one row per registered version: the columns List
-- filters and sorts on (text compared byte-wise, COLLATE "C", so that the
-- order is the same as SQLite's and version_key sorts in semver precedence),
-- the definition as JSON, and a weighted tsvector for search. is_latest
-- marks the highest version of each capability.

CREATE TABLE capabilities (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scheme        TEXT COLLATE "C" NOT NULL,
    domain        TEXT COLLATE "C" NOT NULL,
    name          TEXT COLLATE "C" NOT NULL,
    version       TEXT COLLATE "C" NOT NULL,
    version_key   TEXT COLLATE "C" NOT NULL,
    stability     TEXT COLLATE "C" NOT NULL,
    source        TEXT COLLATE "C" NOT NULL,
    is_latest     BOOLEAN NOT NULL DEFAULT false,
    -- json, not jsonb: kept exactly as written, including \u0000 escapes
    -- that jsonb refuses.
    definition    JSON NOT NULL,
    digest        TEXT NOT NULL,
    trust_tier    TEXT NOT NULL DEFAULT '',
    registered_at TIMESTAMPTZ NOT NULL,
    deprecated_at TIMESTAMPTZ,
    -- name and title weigh A, keywords and intents B, domains and
    -- categories C, description D.
    search        TSVECTOR NOT NULL,
    CONSTRAINT capabilities_key UNIQUE (scheme, domain, name, version)
);

CREATE INDEX capabilities_order ON capabilities (scheme, domain, name, version_key, version);
CREATE INDEX capabilities_latest_order ON capabilities (scheme, domain, name, version_key, version) WHERE is_latest;
CREATE INDEX capabilities_stability ON capabilities (stability);
CREATE INDEX capabilities_source ON capabilities (source);
CREATE INDEX capabilities_search ON capabilities USING GIN (search);

-- Side tables for the multi-valued filters; the primary key serves lookups
-- by value (equality and the dotted-prefix range scans of domains and
-- categories).

CREATE TABLE capability_domains (
    capability_id BIGINT NOT NULL REFERENCES capabilities (id) ON DELETE CASCADE,
    domain        TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (domain, capability_id)
);
CREATE INDEX capability_domains_capability ON capability_domains (capability_id);

CREATE TABLE capability_categories (
    capability_id BIGINT NOT NULL REFERENCES capabilities (id) ON DELETE CASCADE,
    category      TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (category, capability_id)
);
CREATE INDEX capability_categories_capability ON capability_categories (capability_id);

CREATE TABLE capability_intents (
    capability_id BIGINT NOT NULL REFERENCES capabilities (id) ON DELETE CASCADE,
    intent        TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (intent, capability_id)
);
CREATE INDEX capability_intents_capability ON capability_intents (capability_id);

CREATE TABLE capability_bindings (
    capability_id BIGINT NOT NULL REFERENCES capabilities (id) ON DELETE CASCADE,
    binding_type  TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (binding_type, capability_id)
);
CREATE INDEX capability_bindings_capability ON capability_bindings (capability_id);
