-- Bootstrap tokens minted per machine in a cluster's workload cluster (issue 31):
-- one per machine name, for the incarnation it was minted for, with the expiration its
-- Secret in kube-system was last written with (RFC 3339). Kept after the machine's
-- delete so the token sweep deletes the Secret too.
CREATE TABLE minted_tokens (
  machine TEXT COLLATE "C" PRIMARY KEY,
  incarnation TEXT COLLATE "C" NOT NULL,
  cluster TEXT COLLATE "C" NOT NULL,
  token TEXT COLLATE "C" NOT NULL,
  expires_at TEXT COLLATE "C" NOT NULL
);
