-- caphub SQLite schema, version 1.
--
-- capabilities holds one row per registered version: the columns List
-- filters and sorts on, and the definition as JSON text. version_key sorts
-- in semver precedence (registry.VersionKey); is_latest marks the highest
-- version of each capability (ties between versions differing only in build
-- metadata broken by the version string).

CREATE TABLE capabilities (
    id            INTEGER PRIMARY KEY,
    scheme        TEXT    NOT NULL,
    domain        TEXT    NOT NULL,
    name          TEXT    NOT NULL,
    version       TEXT    NOT NULL,
    version_key   TEXT    NOT NULL,
    stability     TEXT    NOT NULL,
    source        TEXT    NOT NULL,
    is_latest     INTEGER NOT NULL DEFAULT 0 CHECK (is_latest IN (0, 1)),
    definition    TEXT    NOT NULL CHECK (json_valid(definition)),
    digest        TEXT    NOT NULL,
    trust_tier    TEXT    NOT NULL DEFAULT '',
    registered_at TEXT    NOT NULL, -- UTC, 2006-01-02T15:04:05.000000Z
    deprecated_at TEXT,             -- same format; NULL until deprecated
    UNIQUE (scheme, domain, name, version)
);

CREATE INDEX capabilities_order ON capabilities (scheme, domain, name, version_key, version);
CREATE INDEX capabilities_latest_order ON capabilities (scheme, domain, name, version_key, version) WHERE is_latest = 1;
CREATE INDEX capabilities_stability ON capabilities (stability);
CREATE INDEX capabilities_source ON capabilities (source);

-- Side tables for the multi-valued filters. Each value is stored once per
-- capability version; the primary key serves lookups by value (equality and
-- the dotted-prefix range scans of domains and categories).

CREATE TABLE capability_domains (
    capability_id INTEGER NOT NULL REFERENCES capabilities (id) ON DELETE CASCADE,
    domain        TEXT    NOT NULL,
    PRIMARY KEY (domain, capability_id)
) WITHOUT ROWID;
CREATE INDEX capability_domains_capability ON capability_domains (capability_id);

CREATE TABLE capability_categories (
    capability_id INTEGER NOT NULL REFERENCES capabilities (id) ON DELETE CASCADE,
    category      TEXT    NOT NULL,
    PRIMARY KEY (category, capability_id)
) WITHOUT ROWID;
CREATE INDEX capability_categories_capability ON capability_categories (capability_id);

CREATE TABLE capability_intents (
    capability_id INTEGER NOT NULL REFERENCES capabilities (id) ON DELETE CASCADE,
    intent        TEXT    NOT NULL,
    PRIMARY KEY (intent, capability_id)
) WITHOUT ROWID;
CREATE INDEX capability_intents_capability ON capability_intents (capability_id);

CREATE TABLE capability_bindings (
    capability_id INTEGER NOT NULL REFERENCES capabilities (id) ON DELETE CASCADE,
    binding_type  TEXT    NOT NULL,
    PRIMARY KEY (binding_type, capability_id)
) WITHOUT ROWID;
CREATE INDEX capability_bindings_capability ON capability_bindings (capability_id);

-- Full-text index, rowid = capabilities.id. Identifiers (names, domains,
-- categories, intents) are stored with their separators turned into spaces
-- so that each word is a token. Ranked with bm25(), name and title weighted
-- highest (see search.go).
CREATE VIRTUAL TABLE capabilities_fts USING fts5 (
    name, title, description, keywords, intents, domains, categories,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
