-- Rollbacks (docs/design.md §8, src/store/compat.ts NEWER_FIELDS): each current
-- document that uses a field a release before schema readable_from would misread, with
-- the fields. schema_compatibility.readable_from is the largest readable_from here (1
-- when there is none), so such a release refuses to start while one of them is stored,
-- and starts again once none is. No backfill: the fields came in v0.3.0, whose
-- migrations start at 007, and no release stored them before this migration.
CREATE TABLE resource_needs (
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  readable_from INTEGER NOT NULL,
  fields TEXT NOT NULL,
  PRIMARY KEY (kind, name)
);
