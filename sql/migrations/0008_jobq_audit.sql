-- 0008_jobq_audit.sql — the record of what operators did to jobs: one row per call of
-- jobq_act_on_jobs (cancel, requeue, delete, run now), written by that function in the same
-- transaction as the change, so that an action taken from psql is recorded as one taken from
-- the CLI or the dashboard. Read by jobq_audit_log (admin); nothing updates a row.

CREATE TABLE jobq_audit (
    id bigint GENERATED ALWAYS AS IDENTITY,
    acted_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    login_role text NOT NULL,
    acting_role text NOT NULL,
    action text NOT NULL,  -- noqa: RF04
    job_ids uuid[] NOT NULL,
    changed uuid[] NOT NULL,
    reason text,
    CONSTRAINT jobq_audit_pkey PRIMARY KEY (id),
    CONSTRAINT jobq_audit_action_check CHECK (
        action IN ('cancel', 'requeue', 'delete', 'run_now')
    )
);

COMMENT ON TABLE jobq_audit IS
'jobq: what operators did to jobs, one row per call of jobq_act_on_jobs, written in the
transaction of the change (a rolled-back action leaves no row). Read through jobq_audit_log()
(admin); kept until an administrator deletes rows.';
COMMENT ON COLUMN jobq_audit.id IS 'The order of the actions: the newest has the highest id.';
COMMENT ON COLUMN jobq_audit.acted_at IS 'When: the start of the acting transaction (now()).';
COMMENT ON COLUMN jobq_audit.login_role IS 'Who logged in: session_user.';
COMMENT ON COLUMN jobq_audit.acting_role IS
'The role the session acted as: the one set by SET ROLE, else the login role.';
COMMENT ON COLUMN jobq_audit.action IS 'cancel, requeue, delete or run_now.';
COMMENT ON COLUMN jobq_audit.job_ids IS 'The jobs asked for, as given (duplicates removed).';
COMMENT ON COLUMN jobq_audit.changed IS
'The jobs the action changed (a subset of job_ids: the others were unknown or in a status the
action leaves alone).';
COMMENT ON COLUMN jobq_audit.reason IS 'Why, as given (NULL: none).';
COMMENT ON CONSTRAINT jobq_audit_pkey ON jobq_audit IS 'One row per action.';
COMMENT ON INDEX jobq_audit_pkey IS
'The actions newest first: jobq_audit_log reads it backwards from its cursor.';
COMMENT ON CONSTRAINT jobq_audit_action_check ON jobq_audit IS
'The actions jobq_act_on_jobs takes.';

REVOKE ALL ON TABLE jobq_audit FROM PUBLIC;
