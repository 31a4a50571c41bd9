-- Discovered machines an operator can name, dismiss and enrol (issue 14): each entry
-- gets a numeric id (an identity column: existing rows are numbered as they are added)
-- for DELETE /v1/discovered/{id}, and `enrolled`, the machine that matches it once one
-- is written ('' until then).
ALTER TABLE discovered ADD COLUMN id BIGINT GENERATED ALWAYS AS IDENTITY;
ALTER TABLE discovered ADD CONSTRAINT discovered_id UNIQUE (id);
ALTER TABLE discovered ADD COLUMN enrolled TEXT COLLATE "C" NOT NULL DEFAULT '';
-- A machine's write looks its selectors up here (mac is the primary key's first column).
CREATE INDEX discovered_uuid ON discovered (uuid) WHERE uuid <> '';
CREATE INDEX discovered_serial ON discovered (serial) WHERE serial <> '';
CREATE INDEX discovered_hostname ON discovered (hostname) WHERE hostname <> '';
