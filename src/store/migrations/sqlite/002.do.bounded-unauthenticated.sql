-- Bounded unauthenticated writes (issue 11): refusal rows of the audit log are pruned
-- by age (an index over their time) and by count (oldest first, an index over their
-- ids), and their number is kept in one counter row, so a cap costs no count(*).
CREATE INDEX audit_refused ON audit (id) WHERE status >= 400;
CREATE INDEX audit_refused_at ON audit (at) WHERE status >= 400;
CREATE TABLE audit_refusals (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  count BIGINT NOT NULL
);
INSERT INTO audit_refusals (id, count) SELECT 1, count(*) FROM audit WHERE status >= 400;
