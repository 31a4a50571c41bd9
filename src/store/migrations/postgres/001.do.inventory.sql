-- bootwright inventory (issue 4) on PostgreSQL: the same tables as the SQLite schema
-- (src/store/migrations/sqlite/001.do.inventory.sql). Names and selector values use the
-- "C" collation so that ordering is byte order, as with SQLite. Timestamps are ISO 8601
-- UTC text (stored exactly as written); labels and specs are JSON text.

-- The existing resources: one row each, pointing at the current revision.
CREATE TABLE resources (
  kind TEXT NOT NULL CHECK (kind IN ('Cluster', 'Profile', 'Machine')),
  name TEXT COLLATE "C" NOT NULL,
  revision INTEGER NOT NULL,
  -- Machines only: the cluster and profile the current spec names (for referencedBy).
  cluster TEXT COLLATE "C",
  profile TEXT COLLATE "C",
  PRIMARY KEY (kind, name)
);
CREATE INDEX resources_cluster ON resources (cluster) WHERE cluster IS NOT NULL;
CREATE INDEX resources_profile ON resources (profile) WHERE profile IS NOT NULL;

-- Every revision ever written, kept after a delete.
CREATE TABLE resource_revisions (
  kind TEXT NOT NULL,
  name TEXT COLLATE "C" NOT NULL,
  revision INTEGER NOT NULL,
  labels TEXT NOT NULL,
  spec TEXT NOT NULL,
  -- Machines only: the cluster and profile revisions current when this one was written.
  cluster_revision INTEGER,
  profile_revision INTEGER,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (kind, name, revision)
);

-- Labels of the existing resources, for indexed label selectors.
CREATE TABLE resource_labels (
  kind TEXT NOT NULL,
  name TEXT COLLATE "C" NOT NULL,
  key TEXT COLLATE "C" NOT NULL,
  value TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (kind, key, value, name)
);
CREATE INDEX resource_labels_owner ON resource_labels (kind, name);

-- Selector values (normalised) of the existing machines: mac, uuid, serial, hostname, label.
CREATE TABLE machine_selectors (
  selector TEXT COLLATE "C" NOT NULL,
  value TEXT COLLATE "C" NOT NULL,
  machine TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (selector, value, machine)
);
CREATE INDEX machine_selectors_machine ON machine_selectors (machine);

-- Fetches of secret-bearing data per machine (maxFetches).
CREATE TABLE fetch_counts (
  machine TEXT COLLATE "C" PRIMARY KEY,
  count INTEGER NOT NULL
);

-- Each fetch by a booting machine.
CREATE TABLE audit (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  machine TEXT COLLATE "C" NOT NULL,
  route TEXT NOT NULL,
  client TEXT NOT NULL,
  status INTEGER NOT NULL,
  at TEXT NOT NULL
);
CREATE INDEX audit_machine ON audit (machine, id);

-- Machines that booted but matched nothing; absent fields are ''.
CREATE TABLE discovered (
  mac TEXT COLLATE "C" NOT NULL,
  uuid TEXT COLLATE "C" NOT NULL,
  serial TEXT COLLATE "C" NOT NULL,
  hostname TEXT COLLATE "C" NOT NULL,
  first_seen TEXT COLLATE "C" NOT NULL,
  last_seen TEXT COLLATE "C" NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (mac, uuid, serial, hostname)
);
CREATE INDEX discovered_last_seen ON discovered (last_seen);
