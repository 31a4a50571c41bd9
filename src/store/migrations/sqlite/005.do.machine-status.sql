-- Machine lifecycle and audit details (issue 14). One status row per machine: the
-- stored phase, when it was entered (indexed, so Stalled machines are counted without
-- a scan of the records) and the rest of the record as JSON (bounded: src/store/status.ts).
CREATE TABLE machine_status (
  machine TEXT PRIMARY KEY,
  phase TEXT NOT NULL,
  since TEXT NOT NULL,
  record TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX machine_status_phase ON machine_status (phase, since);
-- Audit details (the refusal reason is 003's column): who fetched (user agent), what was served, a report's outcome.
ALTER TABLE audit ADD COLUMN user_agent TEXT;
ALTER TABLE audit ADD COLUMN revision INTEGER;
ALTER TABLE audit ADD COLUMN sha256 TEXT;
ALTER TABLE audit ADD COLUMN format TEXT;
ALTER TABLE audit ADD COLUMN ignition_version TEXT;
ALTER TABLE audit ADD COLUMN outcome TEXT;
