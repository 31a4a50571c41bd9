-- Discovered machines an operator can name, dismiss and enrol (issue 14): each entry
-- gets a numeric id (never reused: AUTOINCREMENT) for DELETE /v1/discovered/{id}, and
-- `enrolled`, the machine that matches it once one is written ('' until then).
-- SQLite cannot add a rowid to a WITHOUT ROWID table: the table is rebuilt, its rows
-- numbered in the order they were first seen.
CREATE TABLE discovered_new (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  mac TEXT NOT NULL,
  uuid TEXT NOT NULL,
  serial TEXT NOT NULL,
  hostname TEXT NOT NULL,
  first_seen TEXT NOT NULL,
  last_seen TEXT NOT NULL,
  count INTEGER NOT NULL,
  enrolled TEXT NOT NULL DEFAULT '',
  UNIQUE (mac, uuid, serial, hostname)
);
INSERT INTO discovered_new (mac, uuid, serial, hostname, first_seen, last_seen, count)
  SELECT mac, uuid, serial, hostname, first_seen, last_seen, count FROM discovered ORDER BY first_seen, mac, uuid, serial, hostname;
DROP TABLE discovered;
ALTER TABLE discovered_new RENAME TO discovered;
CREATE INDEX discovered_last_seen ON discovered (last_seen);
-- A machine's write looks its selectors up here (mac is the unique key's first column).
CREATE INDEX discovered_uuid ON discovered (uuid) WHERE uuid <> '';
CREATE INDEX discovered_serial ON discovered (serial) WHERE serial <> '';
CREATE INDEX discovered_hostname ON discovered (hostname) WHERE hostname <> '';
