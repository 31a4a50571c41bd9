-- Transport security (issue 16): why a firmware fetch was refused (a signed URL fetched
-- from another address than the one it was bound to, a second fetch under first-fetch-
-- wins), and the signed URLs already fetched under first-fetch-wins, kept until they
-- expire (a primary key: of two replicas racing for one URL, exactly one inserts it).
ALTER TABLE audit ADD COLUMN reason TEXT;
CREATE TABLE claimed_urls (
  key TEXT PRIMARY KEY,
  machine TEXT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX claimed_urls_expires ON claimed_urls (expires_at);
