-- 0101: remember whether an interrupted --url run was a --full-snapshot run (owned by backend/sync): only a
-- run that listed every page with seen_at bookkeeping may mark vanished records deleted after resuming.
ALTER TABLE sync_state ADD COLUMN IF NOT EXISTS full_snapshot boolean NOT NULL DEFAULT false;
