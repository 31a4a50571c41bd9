-- Bounded unauthenticated writes (issue 11): refusal rows of the audit log are pruned
-- by age and count, so both need an index over the refusals only.
CREATE INDEX audit_refused ON audit (id) WHERE status >= 400;
CREATE INDEX audit_refused_at ON audit (at) WHERE status >= 400;
