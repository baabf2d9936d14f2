-- caphub SQLite schema, version 3.
--
-- capabilities_fts_latest indexes only the highest version of each
-- capability (is_latest = 1), with the same columns as capabilities_fts.
-- Searches without all-versions and without other filters rank and count
-- from it alone, without reading capabilities row by row, and join only the
-- page they return.

CREATE VIRTUAL TABLE capabilities_fts_latest USING fts5 (
    name, title, description, keywords, intents, domains, categories,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

INSERT INTO capabilities_fts_latest (rowid, name, title, description, keywords, intents, domains, categories)
SELECT f.rowid, f.name, f.title, f.description, f.keywords, f.intents, f.domains, f.categories
FROM capabilities_fts f JOIN capabilities c ON c.id = f.rowid
WHERE c.is_latest = 1;
