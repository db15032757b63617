-- Version 2: open every investigation of a session (the war room's
-- session view) without a scan.
CREATE INDEX investigations_session_idx ON investigations (session_id, started_at DESC);
