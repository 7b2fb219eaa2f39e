-- 0014_jobq_hardening.sql — what another role could do to jobq, taken away at the schema level.
--
-- 1. Idempotency keys are unique per job type: the unique index becomes (job_type,
--    idempotency_key), still partial (NULL keys never collide and cost no entry). A producer
--    of one job type that reuses (or guesses) another type's key gets a job of its own: it
--    can no longer obtain the other job's id, and so neither read its result nor cancel it.
--    Existing rows cannot conflict under the wider key (a pair of rows equal in (job_type,
--    idempotency_key) is equal in idempotency_key, which the former index refused). The
--    entry holds the job type too, so the byte bound of a key shrinks from 2,000 to 1,800
--    (jobq__job_argument_problem says why): a row enqueued under the former bound whose key
--    and job type exceed 2,704 bytes together even compressed (only keys of more than 1,800
--    bytes beside job types of multi-byte characters can) makes the build fail with 54000;
--    shorten that key and migrate again.
--
-- The rebuild reads the table and blocks writes to jobq_jobs until the migration commits. The
-- functions of this release name the new index in ON CONFLICT, those of the previous release
-- the former one, so an enqueue with a key that runs between the commit of this migration and
-- that of the function files (the same `jobq migrate`, right after) fails with 42P10 and can
-- be retried.

DROP INDEX jobq_jobs_idempotency_key_key;

CREATE UNIQUE INDEX jobq_jobs_idempotency_key_key ON jobq_jobs (job_type, idempotency_key)
WHERE idempotency_key IS NOT NULL;

COMMENT ON INDEX jobq_jobs_idempotency_key_key IS
'One job per (job_type, idempotency_key): the same key under another job type is another job.
Partial (only non-NULL keys): NULLs never collide, and a job without a key, the common case,
costs no entry here, when inserted or on any update.';

COMMENT ON COLUMN jobq_jobs.idempotency_key IS
'Dedupe of one logical task of one job type: enqueuing a key that exists with the same
job_type, in any status, adds nothing and returns that job''s id
(jobq_jobs_idempotency_key_key). The same key under another job_type is another job. NULL: no
dedupe; NULLs never collide.';

-- 2. The advisory locks of limit keys (jobq__claim_limited) are numbered by a hash of the
--    schema, group and key seeded with a secret of the installation, lock_seed: 64 random bits
--    (an MD5 of two gen_random_uuid(), whose bits come from pg_strong_random), made here once
--    per installation. jobq_settings is readable by jobq's owner and admins alone, so no other
--    role can compute a key's lock number from the names it knows and hold it (a claim skips
--    a key whose lock another session holds). A held lock still shows in pg_locks while a
--    claim holds it; docs/security.md says how to close that view to other roles.

-- The seed is drawn into a variable and written as a constant: Citus refuses a volatile
-- function in an UPDATE or a column default of a distributed table. The default 0 only fills
-- the column until the UPDATE (jobq_settings never gets another row).
ALTER TABLE jobq_settings ADD COLUMN lock_seed bigint NOT NULL DEFAULT 0;

DO $jobq$
DECLARE
    v_seed bigint := (
        'x' || pg_catalog.substr(
            pg_catalog.md5(
                pg_catalog.gen_random_uuid()::text || pg_catalog.gen_random_uuid()::text
            ),
            1,
            16
        )
    )::bit(64)::bigint;
BEGIN
    EXECUTE pg_catalog.format('UPDATE jobq_settings SET lock_seed = %s', v_seed);
END;
$jobq$;

COMMENT ON COLUMN jobq_settings.lock_seed IS
'A secret of this installation (64 random bits, made by migration 0014): the seed of the hash
that numbers the advisory lock of each limit key (jobq__claim_limited), so that a role that
knows a group and key cannot compute the lock''s number and hold it. Readable by jobq''s owner
and admins only; never returned by jobq_configure.';

-- 3. The monitor level sees counts, statuses, timings and job metadata, never a payload, a
--    result or an error text: jobq_job_status (results, last errors) leaves its list (the
--    `--! levels:` line of its file), and jobq_jobs_page returns last_error only to a role that
--    may call jobq_get_job. `jobq grant --as monitor` no longer grants it; a role granted the
--    monitor level before (EXECUTE of its own on every monitor function and on
--    jobq_job_status) that holds no other level (no EXECUTE on jobq_enqueue, which producer,
--    worker and admin all have) loses it here, so an upgrade leaves it exactly the monitor
--    level. A fresh install has none of these functions yet, and nothing to take back.

DO $jobq$
DECLARE
    v_role record;
BEGIN
    FOR v_role IN
        WITH fns AS (
            SELECT p.oid, p.proname::text AS name, p.proacl, p.proowner
            FROM pg_catalog.pg_proc AS p
            INNER JOIN pg_catalog.pg_namespace AS n ON p.pronamespace = n.oid
            WHERE
                n.nspname = pg_catalog.current_schema()
                AND p.proname::text IN (
                    'jobq_stats', 'jobq_health', 'jobq_metrics', 'jobq_queue_summary',
                    'jobq_jobs_page', 'jobq_job_status', 'jobq_enqueue'
                )
        ),

        held AS (
            SELECT a.grantee, f.name
            FROM fns AS f
            CROSS JOIN LATERAL pg_catalog.aclexplode(f.proacl) AS a
            WHERE
                a.privilege_type = 'EXECUTE'
                AND a.grantee <> 0
                AND a.grantee <> f.proowner
        )

        SELECT h.grantee::regrole AS grantee, s.oid::regprocedure AS fn
        FROM held AS h
        INNER JOIN fns AS s ON s.name = 'jobq_job_status'
        WHERE h.name = 'jobq_job_status'
        GROUP BY h.grantee, s.oid
        HAVING
            (
                SELECT pg_catalog.count(DISTINCT x.name)
                FROM held AS x
                WHERE x.grantee = h.grantee AND x.name <> 'jobq_job_status'
            ) = (
                SELECT pg_catalog.count(*)
                FROM fns AS y
                WHERE y.name NOT IN ('jobq_job_status', 'jobq_enqueue')
            )
            AND NOT EXISTS (
                SELECT FROM held AS z
                WHERE z.grantee = h.grantee AND z.name = 'jobq_enqueue'
            )
    LOOP
        EXECUTE pg_catalog.format(
            'REVOKE EXECUTE ON FUNCTION %s FROM %s', v_role.fn, v_role.grantee
        );
    END LOOP;
END;
$jobq$;

-- 4. A bounded metrics label space. Every (queue, job_type) that jobq__metrics_count met got
--    its rows in jobq_metric_counters, so producers chose the label cardinality of every
--    scrape forever (20,000 queue names in one enqueue made a 315 MB scrape). Now a label set
--    is counted under its own names only once admitted to jobq_metric_labels, which admits at
--    most jobq_settings.metrics_label_sets of them (default 1,000, jobq_configure
--    (metrics_label_sets => ...)); the counts of any other go to the overflow label set
--    (queue '' and job_type '': no real queue or job type is blank), and
--    jobq_metrics_forget() removes label sets that have no jobs. The label sets counted so far
--    are admitted here, all of them (an installation over the bound keeps them until they are
--    forgotten).

ALTER TABLE jobq_settings ADD COLUMN metrics_label_sets integer NOT NULL DEFAULT 1000;

ALTER TABLE jobq_settings ADD CONSTRAINT jobq_settings_metrics_label_sets_check CHECK (
    metrics_label_sets BETWEEN 0 AND 1000000
);

COMMENT ON COLUMN jobq_settings.metrics_label_sets IS
'How many (queue, job_type) label sets jobq_metrics() counts under their own names (admitted to
jobq_metric_labels, first come first served); the counts of the others go to the overflow label
set, queue '''' and job_type ''''. Default 1000; jobq_configure(metrics_label_sets => ...).';

COMMENT ON CONSTRAINT jobq_settings_metrics_label_sets_check ON jobq_settings IS
'The label-set bound is 0 (everything in the overflow label set) to 1,000,000.';

-- No unique index: two sessions admitting the same new label set at once must not wait for
-- one another (counting never waits for another session's transaction), so each inserts a
-- row and the set is counted once, as the distinct pairs.
CREATE TABLE jobq_metric_labels (
    queue text NOT NULL,
    job_type text NOT NULL
);

CREATE INDEX jobq_metric_labels_idx ON jobq_metric_labels (queue, job_type);

COMMENT ON TABLE jobq_metric_labels IS
'jobq: the (queue, job_type) label sets that jobq_metrics() counts under their own names, at
most jobq_settings.metrics_label_sets distinct pairs (a pair admitted by two sessions at once
may have two rows). Written by jobq__metrics_count when it meets a new pair while there is
room, emptied of pairs without jobs by jobq_metrics_forget().';
COMMENT ON COLUMN jobq_metric_labels.queue IS 'The label set''s queue.';
COMMENT ON COLUMN jobq_metric_labels.job_type IS 'The label set''s job_type.';
COMMENT ON INDEX jobq_metric_labels_idx IS
'Whether a pair is admitted: one probe by jobq__metrics_count for a pair its backend has not
counted yet.';

REVOKE ALL ON TABLE jobq_metric_labels FROM PUBLIC;

INSERT INTO jobq_metric_labels (queue, job_type)
SELECT DISTINCT
    c.queue,
    c.job_type
FROM (
    SELECT
        x.queue,
        x.job_type
    FROM jobq_metric_counters AS x
    UNION ALL
    SELECT
        d.queue,
        d.job_type
    FROM jobq_metric_deltas AS d
) AS c
WHERE NOT (c.queue = '' AND c.job_type = '')
ORDER BY c.queue, c.job_type;
