-- Bootstrap tokens minted per machine in a cluster's workload cluster (issue 31):
-- one per machine name, for the incarnation it was minted for, with the expiration its
-- Secret in kube-system was last written with (RFC 3339). Kept after the machine's
-- delete so the token sweep deletes the Secret too.
CREATE TABLE minted_tokens (
  machine TEXT PRIMARY KEY,
  incarnation TEXT NOT NULL,
  cluster TEXT NOT NULL,
  token TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
