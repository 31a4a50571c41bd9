-- The bound on a machine's served audit rows in constant time (issue 32): every served
-- row (status below 400) of a class (the unauthenticated /ipxe and /boot.ipxe, or any
-- other route) carries its number in that class, one more than the newest's, so the rows
-- beyond BOOTWRIGHT_SERVED_AUDIT_MAX_PER_MACHINE are found in this index instead of by
-- walking the newest thousand. The index is unique: two replicas that numbered a row
-- alike from one snapshot cannot both commit it (the second reads again and retries).
-- Rows of earlier releases are numbered here; a row an earlier release writes later has
-- none, and the service numbers the machine's rows again before it counts them.
ALTER TABLE audit ADD COLUMN served_seq INTEGER;
UPDATE audit SET served_seq = numbered.n
  FROM (SELECT id, row_number() OVER (PARTITION BY machine, route IN ('/ipxe', '/boot.ipxe') ORDER BY id) AS n FROM audit WHERE status < 400) AS numbered
  WHERE audit.id = numbered.id;
CREATE UNIQUE INDEX audit_served ON audit (machine, (route IN ('/ipxe', '/boot.ipxe')), served_seq) WHERE status < 400;
-- A served row the statement would number after one an earlier release left
-- unnumbered: its error (SQLSTATE BW002) rolls the statement back, and the service
-- numbers the machine's rows again in a transaction.
CREATE FUNCTION bootwright_audit_unnumbered(machine TEXT) RETURNS INTEGER
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'served audit rows of machine % written by an earlier release are not numbered', machine USING ERRCODE = 'BW002';
END
$$;
