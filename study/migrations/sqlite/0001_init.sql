-- Studies and trials. Times are Unix nanoseconds (UTC); JSON columns hold
-- the encodings documented in package study.
CREATE TABLE studies (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    name           TEXT    NOT NULL UNIQUE,
    directions     TEXT    NOT NULL,
    space          TEXT    NOT NULL,
    sampler        TEXT    NOT NULL,
    sampler_config TEXT    NOT NULL DEFAULT '{}',
    seed           INTEGER NOT NULL,
    created_at     INTEGER NOT NULL,
    user_attrs     TEXT    NOT NULL DEFAULT '{}'
);

CREATE TABLE trials (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    study_id          INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    number            INTEGER NOT NULL,
    state             TEXT    NOT NULL,
    params            TEXT    NOT NULL,
    objective_values  TEXT,
    constraint_values TEXT,
    generation        INTEGER NOT NULL DEFAULT 0,
    datetime_start    INTEGER,
    datetime_complete INTEGER,
    heartbeat         INTEGER,
    worker            TEXT    NOT NULL DEFAULT '',
    user_attrs        TEXT,
    system_attrs      TEXT,
    artifacts         TEXT    NOT NULL DEFAULT '',
    requeued          INTEGER NOT NULL DEFAULT 0,
    UNIQUE (study_id, number)
);

CREATE INDEX trials_by_state ON trials (study_id, state);
