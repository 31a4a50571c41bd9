-- bootwright inventory (issue 4): clusters, profiles and machines with their history,
-- the machine selector index, fetch counters, the audit log and discovered machines.
-- Timestamps are ISO 8601 UTC text; labels and specs are JSON text.

-- The existing resources: one row each, pointing at the current revision.
CREATE TABLE resources (
  kind TEXT NOT NULL CHECK (kind IN ('Cluster', 'Profile', 'Machine')),
  name TEXT NOT NULL,
  revision INTEGER NOT NULL,
  -- Machines only: the cluster and profile the current spec names (for referencedBy).
  cluster TEXT,
  profile TEXT,
  PRIMARY KEY (kind, name)
) WITHOUT ROWID;
CREATE INDEX resources_cluster ON resources (cluster) WHERE cluster IS NOT NULL;
CREATE INDEX resources_profile ON resources (profile) WHERE profile IS NOT NULL;

-- Every revision ever written, kept after a delete.
CREATE TABLE resource_revisions (
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  revision INTEGER NOT NULL,
  labels TEXT NOT NULL,
  spec TEXT NOT NULL,
  -- Machines only: the cluster and profile revisions current when this one was written.
  cluster_revision INTEGER,
  profile_revision INTEGER,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (kind, name, revision)
) WITHOUT ROWID;

-- Labels of the existing resources, for indexed label selectors.
CREATE TABLE resource_labels (
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (kind, key, value, name)
) WITHOUT ROWID;
CREATE INDEX resource_labels_owner ON resource_labels (kind, name);

-- Selector values (normalised) of the existing machines: mac, uuid, serial, hostname, label.
CREATE TABLE machine_selectors (
  selector TEXT NOT NULL,
  value TEXT NOT NULL,
  machine TEXT NOT NULL,
  PRIMARY KEY (selector, value, machine)
) WITHOUT ROWID;
CREATE INDEX machine_selectors_machine ON machine_selectors (machine);

-- Fetches of secret-bearing data per machine (maxFetches).
CREATE TABLE fetch_counts (
  machine TEXT PRIMARY KEY,
  count INTEGER NOT NULL
) WITHOUT ROWID;

-- Each fetch by a booting machine.
CREATE TABLE audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  machine TEXT NOT NULL,
  route TEXT NOT NULL,
  client TEXT NOT NULL,
  status INTEGER NOT NULL,
  at TEXT NOT NULL
);
CREATE INDEX audit_machine ON audit (machine, id);

-- Machines that booted but matched nothing; absent fields are ''.
CREATE TABLE discovered (
  mac TEXT NOT NULL,
  uuid TEXT NOT NULL,
  serial TEXT NOT NULL,
  hostname TEXT NOT NULL,
  first_seen TEXT NOT NULL,
  last_seen TEXT NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (mac, uuid, serial, hostname)
) WITHOUT ROWID;
CREATE INDEX discovered_last_seen ON discovered (last_seen);
