-- An /ipxe flood erases no evidence (issue 30): a served answer of an unauthenticated
-- route (/ipxe, /boot.ipxe) identical to the machine's newest served row (same route,
-- client, status, User-Agent and reason) is counted in that row instead of
-- adding one: repeats is how many answers it stands for, last_at the newest one's time
-- (NULL while it stands for one). Older releases insert rows of one, as before.
ALTER TABLE audit ADD COLUMN repeats INTEGER NOT NULL DEFAULT 1;
ALTER TABLE audit ADD COLUMN last_at TEXT;
