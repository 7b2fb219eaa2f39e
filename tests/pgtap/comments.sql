-- Comments, checked in the catalogue: every jobq object explains itself (`\d+ jobq_jobs`, `\df+`,
-- `\di+`, `\dd`), and docs/sql-api.md is generated from these texts.
--
-- Functions (what it does, its arguments and its result): a public
-- function's comment is a summary, then the parts "Arguments:" (naming each input argument, or
-- "none"), "Result:" and "Errors:" (or "none"), in that order, each at the start of a line;
-- "Concurrency:" may follow. A private helper's comment starts with "Private.".
-- Tables: every table, column, index and named constraint has a comment, and the comment of
-- jobq_jobs explains each of its storage settings.
BEGIN;
SELECT plan(13);

-- Functions ---------------------------------------------------------------------------------

SELECT is_empty(
    $$SELECT p.oid::regprocedure FROM pg_proc AS p
      WHERE p.pronamespace = 'public'::regnamespace
        AND coalesce(btrim(obj_description(p.oid, 'pg_proc')), '') = ''$$,
    'every jobq function (private helpers included) has a non-empty COMMENT'
);

CREATE TEMP VIEW public_comments AS
SELECT p.oid, p.proname, obj_description(p.oid, 'pg_proc') AS comment,
       substring(obj_description(p.oid, 'pg_proc') FROM '(?s)\nArguments:(.*?)\nResult:') AS arguments
FROM pg_proc AS p
WHERE p.pronamespace = 'public'::regnamespace AND p.proname NOT LIKE 'jobq\_\_%';

SELECT is_empty(
    $$SELECT proname FROM public_comments
      WHERE comment !~ '(?s)^\S.*\nArguments: .*\nResult: .*\nErrors: .*'$$,
    'every public function''s comment has a summary, then Arguments:, Result: and Errors: parts, in order'
);

SELECT is_empty(
    $$SELECT proname FROM public_comments
      WHERE comment ~ '\n(Arguments|Result|Errors|Concurrency):'
        AND (length(comment) - length(replace(comment, E'\nArguments:', ''))) / length(E'\nArguments:') <> 1$$,
    'each part appears once (no second Arguments: part)'
);

SELECT is_empty(
    $$SELECT format('%s: %s', c.proname, a.name)
      FROM public_comments AS c
      JOIN pg_proc AS p ON p.oid = c.oid
      CROSS JOIN LATERAL unnest(p.proargnames, coalesce(p.proargmodes, array_fill('i'::"char",
                                ARRAY[coalesce(cardinality(p.proargnames), 0)]))) AS a (name, mode)
      WHERE a.mode IN ('i', 'b', 'v')   -- input arguments, not the columns of RETURNS TABLE
        AND coalesce(c.arguments, '') !~ ('\m' || a.name || '\M')$$,
    'the Arguments: part of every public function names each of its input arguments'
);

SELECT is_empty(
    $$SELECT c.proname FROM public_comments AS c JOIN pg_proc AS p ON p.oid = c.oid
      WHERE coalesce(p.pronargs, 0) = 0 AND btrim(c.arguments) <> 'none.'$$,
    'a function without arguments says "Arguments: none."'
);

SELECT is_empty(
    $$SELECT proname FROM public_comments WHERE length(comment) < 120$$,
    'no public function has a token comment (under 120 characters)'
);

SELECT is_empty(
    $$SELECT p.proname FROM pg_proc AS p
      WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'jobq\_\_%'
        AND obj_description(p.oid, 'pg_proc') NOT LIKE 'Private.%'$$,
    'the comment of each private helper starts with "Private."'
);

-- Tables, columns, indexes, constraints, storage -------------------------------------------
-- The partitions of jobq_jobs_history are its parts (made and dropped by
-- jobq_maintain_history): the partitioned table's comments explain them.

CREATE TEMP VIEW jobq_tables AS
SELECT c.oid, c.relname FROM pg_class AS c
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
  AND NOT c.relispartition;

SELECT set_eq('SELECT relname::text FROM jobq_tables',
              $$VALUES ('jobq_jobs'), ('jobq_settings'), ('jobq_schedules'), ('jobq_workers'),
                       ('jobq_migrations'), ('jobq_metric_counters'), ('jobq_metric_deltas'),
                       ('jobq_limits'), ('jobq_limit_keys'), ('jobq_limit_starts'),
                       ('jobq_cancel_requests'), ('jobq__migrate_lock'), ('jobq_metric_labels'),
                       ('jobq_awaits'), ('jobq_jobs_history'), ('jobq_retention'), ('jobq_paused_queues'),
                       ('jobq_job_dependencies'), ('jobq_audit'), ('jobq_index_rebuilds')$$,
              'the jobq tables (so that the checks below see them all)');

SELECT is_empty(
    $$SELECT relname FROM jobq_tables WHERE coalesce(btrim(obj_description(oid, 'pg_class')), '') = ''$$,
    'every jobq table has a comment'
);

SELECT is_empty(
    $$SELECT format('%s.%s', t.relname, a.attname)
      FROM jobq_tables AS t JOIN pg_attribute AS a ON a.attrelid = t.oid
      WHERE a.attnum > 0 AND NOT a.attisdropped
        AND coalesce(btrim(col_description(t.oid, a.attnum)), '') = ''$$,
    'every column of a jobq table has a comment'
);

SELECT is_empty(
    $$SELECT i.indexrelid::regclass::text
      FROM jobq_tables AS t JOIN pg_index AS i ON i.indrelid = t.oid
      WHERE coalesce(btrim(obj_description(i.indexrelid, 'pg_class')), '') = ''$$,
    'every index of a jobq table has a comment'
);

-- NOT NULL constraints (named in pg_constraint from PostgreSQL 18 on) are explained by their
-- column's comment; every other constraint by its own.
SELECT is_empty(
    $$SELECT format('%s.%s', t.relname, k.conname)
      FROM jobq_tables AS t JOIN pg_constraint AS k ON k.conrelid = t.oid
      WHERE k.contype <> 'n'
        AND coalesce(btrim(obj_description(k.oid, 'pg_constraint')), '') = ''$$,
    'every named constraint of a jobq table has a comment'
);

SELECT is_empty(
    $$SELECT o.option
      FROM pg_class AS c CROSS JOIN LATERAL unnest(c.reloptions) AS o (option)
      WHERE c.oid = 'jobq_jobs'::regclass
        AND strpos(obj_description(c.oid, 'pg_class'),
                   regexp_replace(o.option, '=0\.0$', '=0')) = 0$$,
    'the comment of jobq_jobs explains each of its storage settings (name=value)'
);

SELECT * FROM finish();
ROLLBACK;
