-- rcamesh investigation history, version 1: investigations with their
-- records, reports, pins and critic verdicts. Messages are stored as
-- protobuf (lossless, the public contract's encoding); the columns beside
-- them are what queries filter and sort on.
CREATE TABLE investigations (
    id          text PRIMARY KEY,
    session_id  text NOT NULL,
    title       text NOT NULL DEFAULT '',
    alert_name  text NOT NULL DEFAULT '',
    service     text NOT NULL DEFAULT '',
    namespace   text NOT NULL DEFAULT '',
    category    text NOT NULL,
    status      text NOT NULL,
    state       text NOT NULL,
    root_cause  text NOT NULL DEFAULT '',
    confidence  double precision NOT NULL DEFAULT 0,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz,
    tool_calls  integer NOT NULL DEFAULT 0,
    pin_count   integer NOT NULL DEFAULT 0,
    loops       integer NOT NULL DEFAULT 0,
    silent      boolean NOT NULL DEFAULT false,
    record      bytea NOT NULL,
    search      tsvector NOT NULL,
    saved_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX investigations_started_idx ON investigations (started_at DESC, id DESC);
CREATE INDEX investigations_service_idx ON investigations (service, started_at DESC);
CREATE INDEX investigations_namespace_idx ON investigations (namespace, started_at DESC);
CREATE INDEX investigations_category_idx ON investigations (category, started_at DESC);
CREATE INDEX investigations_finished_idx ON investigations (finished_at);
CREATE INDEX investigations_search_idx ON investigations USING gin (search);

CREATE TABLE reports (
    investigation_id text PRIMARY KEY REFERENCES investigations (id) ON DELETE CASCADE,
    session_id       text NOT NULL,
    markdown         text NOT NULL,
    confidence       double precision NOT NULL DEFAULT 0,
    silent           boolean NOT NULL DEFAULT false,
    created_at       timestamptz,
    report           bytea NOT NULL
);

CREATE TABLE pins (
    investigation_id  text NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    pin_id            text NOT NULL,
    ordinal           integer NOT NULL,
    source_tool       text NOT NULL DEFAULT '',
    validation_status text NOT NULL DEFAULT '',
    claim             text NOT NULL DEFAULT '',
    pin               bytea NOT NULL,
    PRIMARY KEY (investigation_id, pin_id)
);

CREATE TABLE critic_verdicts (
    investigation_id      text NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    ordinal               integer NOT NULL,
    round                 integer NOT NULL,
    score                 double precision NOT NULL,
    action                text NOT NULL,
    summary               text NOT NULL DEFAULT '',
    leading_hypothesis_id text NOT NULL DEFAULT '',
    review                bytea NOT NULL,
    PRIMARY KEY (investigation_id, ordinal)
);
