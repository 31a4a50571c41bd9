-- Ratcheting (issue 27, docs/design.md §8): the rules version (src/rules.ts
-- RULES_VERSION) each revision was accepted under. Every revision written before this
-- migration, and any an older release writes after it, gets 0: rules added later do not
-- refuse them at boot.
ALTER TABLE resource_revisions ADD COLUMN rules INTEGER NOT NULL DEFAULT 0;
-- Rollbacks: the oldest schema version whose release may still run on this data. A
-- release whose newest migration is below it refuses to start (src/store/compat.ts);
-- a migration that older releases cannot live with raises it to its own version.
-- Every migration so far only adds, so releases from schema 1 (v0.1.0) on can.
CREATE TABLE schema_compatibility (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  readable_from INTEGER NOT NULL
);
INSERT INTO schema_compatibility (id, readable_from) VALUES (1, 1);
