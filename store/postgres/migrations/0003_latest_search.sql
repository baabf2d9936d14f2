-- caphub PostgreSQL schema, version 3.
--
-- A GIN index over the search vectors of the latest versions only: most
-- searches ask for the highest version of each capability, and this index
-- gives them the matching latest rows directly instead of every version's.

CREATE INDEX capabilities_search_latest ON capabilities USING GIN (search) WHERE is_latest;
