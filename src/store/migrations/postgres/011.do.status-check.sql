-- One statement per served firmware answer (issue 32, src/store/postgres.ts
-- recordAudit): the status transition is written only if the status record is still
-- the one it was computed from (a compare-and-set in the same statement as the audit
-- row and the URL claim). When it is not, the statement calls this function, whose
-- error (SQLSTATE BW001) rolls the whole statement back: nothing of it is written, and
-- the service reads the record again and retries. Older releases never call it.
CREATE FUNCTION bootwright_status_changed(machine TEXT) RETURNS INTEGER
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the status of machine % changed since it was read', machine USING ERRCODE = 'BW001';
END
$$;
