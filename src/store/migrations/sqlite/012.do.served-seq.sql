-- The bound on a machine's served audit rows in constant time (issue 32): every served
-- row (status below 400) of a class (the unauthenticated /ipxe and /boot.ipxe, or any
-- other route) carries its number in that class, one more than the newest's, so the rows
-- beyond BOOTWRIGHT_SERVED_AUDIT_MAX_PER_MACHINE are found in this index instead of by
-- walking the newest thousand (170 µs per fetch at 1,000 rows). Rows of earlier releases
-- are numbered here; a row an earlier release writes later has none, and the service
-- numbers the machine's rows again before it counts them.
ALTER TABLE audit ADD COLUMN served_seq INTEGER;
UPDATE audit SET served_seq = numbered.n
  FROM (SELECT id, row_number() OVER (PARTITION BY machine, route IN ('/ipxe', '/boot.ipxe') ORDER BY id) AS n FROM audit WHERE status < 400) AS numbered
  WHERE audit.id = numbered.id;
CREATE UNIQUE INDEX audit_served ON audit (machine, route IN ('/ipxe', '/boot.ipxe'), served_seq) WHERE status < 400;
