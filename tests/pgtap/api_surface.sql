-- The API surface, as the migrations and function files build it: the functions and their
-- exact signatures (argument names and defaults are API), the three tables
-- with their columns, types, defaults and named constraints, the partial claim
-- indexes, and the security properties of every public function (SECURITY DEFINER, a fixed
-- search_path). pgTAP itself lives in schema tap, so schema public holds only jobq.
BEGIN;
SELECT plan(200);

------------------------------------------------------------------------------------------
-- Functions
------------------------------------------------------------------------------------------

-- The files of sql/functions/ are the API: scripts/pgtap.sh passes their names as
-- :'function_files', so that this list is never kept by hand.
SELECT functions_are('public', string_to_array(:'function_files', ','),
    'schema public has exactly the functions of sql/functions/, public and private helpers');

-- Each function comes from its file in sql/functions/, which the runner records as
-- functions/<name>: no function without a file, no file without its function.
SELECT set_eq(
    $$SELECT proname::text FROM pg_proc WHERE pronamespace = 'public'::regnamespace$$,
    $$SELECT substr(version, length('functions/') + 1) FROM jobq_migrations
      WHERE version LIKE 'functions/%'$$,
    'every function is recorded as applied from its file in sql/functions/, and only those'
);

SELECT is_empty(
    $$SELECT proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace
      GROUP BY proname HAVING count(*) > 1$$,
    'no overloads: one function per name (optional behaviour is a trailing DEFAULT)'
);

-- Every signature, names and defaults included: a renamed argument breaks named calls.
SELECT results_eq(
    $$SELECT p.proname::text COLLATE "default", pg_get_function_arguments(p.oid), pg_get_function_result(p.oid)
      FROM pg_proc AS p WHERE p.pronamespace = 'public'::regnamespace ORDER BY p.proname$$,
    $$VALUES
    ('jobq__add_edges'::text, 'children uuid[], parents uuid[], rules text[], argument text, '
                         'graft boolean DEFAULT false'::text, 'integer'::text),
    ('jobq__append_error', 'errors jsonb, entry jsonb', 'jsonb'),
    ('jobq__audit', 'action text, job_ids uuid[], changed uuid[], reason text, filters jsonb DEFAULT NULL::jsonb', 'void'),
    ('jobq__available', 'limited boolean DEFAULT NULL::boolean',
                        'TABLE(queue text, job_type text, jobs bigint, oldest_available_at timestamp with time zone)'),
    ('jobq__awaits_end', 'job_ids uuid[]', 'text[]'),
    ('jobq__blank', 'value text', 'boolean'),
    ('jobq__cancel_apply', '', 'trigger'),
    ('jobq__channel', '', 'text'),
    ('jobq__claim_limited', 'worker_id text, job_types text[], queues text[], batch_size integer, '
                            'range_type_hashes bigint[], range_queue_hashes bigint[], '
                            'lock_until timestamp with time zone, paused_queues text[]', 'SETOF jobq_jobs'),
    ('jobq__complete_rows', 'caller text, job_ids uuid[], worker_id text, attempts integer[], '
                            'results jsonb[], OUT done uuid[], OUT awaited uuid[], OUT parents uuid[]',
                            'record'),
    ('jobq__cron_fires', 'masks bigint[], timezone text, first timestamp with time zone, '
                         'until timestamp with time zone, max_fires integer', 'timestamp with time zone[]'),
    ('jobq__cron_next', 'masks bigint[], timezone text, after timestamp with time zone', 'timestamp with time zone'),
    ('jobq__cron_parse', 'cron text', 'bigint[]'),
    ('jobq__dependencies_gone', '', 'integer'),
    ('jobq__dependency_argument_problem', 'depends_on uuid[], on_dependency_failure text', 'text'),
    ('jobq__dependents_finished', 'job_ids uuid[], statuses text[]', 'integer'),
    ('jobq__error_entry', 'attempt integer, at jsonb, worker text, error text, kind text DEFAULT NULL::text', 'jsonb'),
    ('jobq__error_line', 'error text', 'text'),
    ('jobq__event_channel', 'kind text', 'text'),
    ('jobq__history_filled', 'partition_name text', 'boolean'),
    ('jobq__history_partitions', 'status text',
                                 'TABLE(name text, lower_at timestamp with time zone, upper_at timestamp with time zone)'),
    ('jobq__history_truncate', 'partition_name text, count_rows boolean', 'bigint'),
    ('jobq__insert_jobs', 'job_types text[], payloads jsonb[], idempotency_keys text[], max_attempts integer[], '
                          'run_ats timestamp with time zone[], priorities integer[], queues text[], '
                          'limit_groups text[], limit_keys text[]', 'TABLE(ord integer, id uuid)'),
    ('jobq__job_argument_problem', 'job_type text, queue text, idempotency_key text, max_attempts integer, priority integer', 'text'),
    ('jobq__limit_argument_problem', 'limit_group text, limit_key text', 'text'),
    ('jobq__metric_add', 'a bigint[], b bigint[]', 'bigint[]'),
    ('jobq__metric_bounds', '', 'double precision[]'),
    ('jobq__metric_bucket', 'seconds double precision', 'integer'),
    ('jobq__metric_histogram', 'buckets integer[]', 'bigint[]'),
    ('jobq__metric_labels', 'queues text[], job_types text[]',
     'TABLE(queue text, job_type text, label_queue text, label_job_type text)'),
    ('jobq__metrics_count', 'kind text, queues text[], job_types text[], statuses text[] DEFAULT NULL::text[], '
                            'seconds double precision[] DEFAULT NULL::double precision[]', 'integer'),
    ('jobq__metrics_fold', '', 'bigint'),
    ('jobq__notify', 'queues text[]', 'integer'),
    ('jobq__notify_events', 'kind text, payloads text[]', 'integer'),
    ('jobq__requeue', 'job_ids uuid[]', 'TABLE(queue text, job_type text, old_status text)'),
    ('jobq__retire', 'job_ids uuid[]', 'integer'),
    ('jobq__retire_row', '', 'trigger'),
    ('jobq__retry_at', 'failed_at timestamp with time zone, attempts integer, backoff interval', 'timestamp with time zone'),
    ('jobq__schedule_fire', 'name text, job_type text, payload jsonb, queue text, priority integer, '
                            'max_attempts integer, fire_at timestamp with time zone', 'uuid'),
    ('jobq__statuses', 'finished boolean DEFAULT NULL::boolean', 'text[]'),
    ('jobq__tick', 'at timestamp with time zone', 'TABLE(schedule text, fire_at timestamp with time zone, job_id uuid)'),
    ('jobq__uuid_v7', '', 'uuid'),
    ('jobq__uuid_v7_many', 'count integer', 'uuid[]'),
    ('jobq__worker_id_error', 'worker_id text', 'text'),
    ('jobq__worker_seen', 'worker_id text, job_types text[], queues text[]', 'void'),
    ('jobq_act_on_jobs', 'action text, job_ids uuid[], reason text DEFAULT NULL::text',
                         'TABLE(job_id uuid, outcome text)'),
    ('jobq_add_dependencies', 'job_id uuid, depends_on uuid[]', 'integer'),
    ('jobq_audit_log', 'before_id bigint DEFAULT NULL::bigint, max_rows integer DEFAULT 100', 'SETOF jobq_audit'),
    ('jobq_await', 'job_ids uuid[], timeout interval DEFAULT ''00:00:30''::interval',
                   'TABLE(id uuid, status text, attempts integer, result jsonb, last_error text, '
                   'finished_at timestamp with time zone, cancel_requested boolean)'),
    ('jobq_cancel', 'job_ids uuid[], reason text DEFAULT NULL::text', 'TABLE(job_id uuid, status text)'),
    ('jobq_cancel_requested', 'job_ids uuid[]', 'SETOF uuid'),
    ('jobq_capped_groups', '', 'TABLE(limit_group text)'),
    ('jobq_complete', 'job_id uuid, worker_id text, attempt integer DEFAULT NULL::integer, '
                      'result jsonb DEFAULT NULL::jsonb', 'boolean'),
    ('jobq_complete_and_claim', 'job_ids uuid[], worker_id text, attempts integer[] DEFAULT NULL::integer[], '
                                'results jsonb[] DEFAULT NULL::jsonb[], job_types text[] DEFAULT NULL::text[], '
                                'batch_size integer DEFAULT 1, lock_timeout interval DEFAULT ''00:05:00''::interval, '
                                'queues text[] DEFAULT NULL::text[]', 'SETOF jobq_jobs'),
    ('jobq_complete_many', 'job_ids uuid[], worker_id text, attempts integer[] DEFAULT NULL::integer[], '
                           'results jsonb[] DEFAULT NULL::jsonb[]', 'integer'),
    ('jobq_configure', 'max_payload_bytes integer DEFAULT NULL::integer, metrics boolean DEFAULT NULL::boolean, '
                       'metrics_label_sets integer DEFAULT NULL::integer', 'jsonb'),
    ('jobq_dependencies', 'job_id uuid', 'TABLE(id uuid, job_type text, status text, result jsonb)'),
    ('jobq_dequeue', 'worker_id text, job_types text[] DEFAULT NULL::text[], batch_size integer DEFAULT 1, '
                     'lock_timeout interval DEFAULT ''00:05:00''::interval, queues text[] DEFAULT NULL::text[]',
                     'SETOF jobq_jobs'),
    ('jobq_enqueue', 'job_type text, payload jsonb DEFAULT ''{}''::jsonb, idempotency_key text DEFAULT NULL::text, '
                     'max_attempts integer DEFAULT 5, run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, '
                     'priority integer DEFAULT 0, queue text DEFAULT ''default''::text, '
                     'limit_group text DEFAULT NULL::text, limit_key text DEFAULT NULL::text, '
                     'depends_on uuid[] DEFAULT NULL::uuid[], on_dependency_failure text DEFAULT ''cancel''::text', 'uuid'),
    ('jobq_enqueue_arrays', 'job_types text[], payloads jsonb[] DEFAULT NULL::jsonb[], '
                            'idempotency_keys text[] DEFAULT NULL::text[], max_attempts integer[] DEFAULT NULL::integer[], '
                            'run_ats timestamp with time zone[] DEFAULT NULL::timestamp with time zone[], '
                            'priorities integer[] DEFAULT NULL::integer[], queues text[] DEFAULT NULL::text[], '
                            'limit_groups text[] DEFAULT NULL::text[], limit_keys text[] DEFAULT NULL::text[]',
                            'TABLE(ord integer, id uuid)'),
    ('jobq_enqueue_many', 'jobs jsonb', 'TABLE(ord integer, id uuid)'),
    ('jobq_error_summary', 'since interval DEFAULT ''01:00:00''::interval, per_type integer DEFAULT 5',
                           'TABLE(job_type text, error text, failures bigint, jobs bigint, '
                           'last_seen timestamp with time zone)'),
    ('jobq_fail', 'job_id uuid, worker_id text, error text, retry boolean DEFAULT true, '
                  'backoff interval DEFAULT ''00:00:10''::interval, attempt integer DEFAULT NULL::integer', 'text'),
    ('jobq_fail_many', 'job_ids uuid[], worker_id text, errors text[], retries boolean[] DEFAULT NULL::boolean[], '
                       'backoffs interval[] DEFAULT NULL::interval[], attempts integer[] DEFAULT NULL::integer[]',
                       'TABLE(ord integer, job_id uuid, status text)'),
    ('jobq_find_jobs', 'job_id uuid DEFAULT NULL::uuid, idempotency_key text DEFAULT NULL::text, '
                       'job_type text DEFAULT NULL::text, queue text DEFAULT NULL::text, '
                       'statuses text[] DEFAULT NULL::text[], '
                       'created_after timestamp with time zone DEFAULT NULL::timestamp with time zone, '
                       'created_before timestamp with time zone DEFAULT NULL::timestamp with time zone, '
                       'finished_after timestamp with time zone DEFAULT NULL::timestamp with time zone, '
                       'finished_before timestamp with time zone DEFAULT NULL::timestamp with time zone, '
                       'payload_contains jsonb DEFAULT NULL::jsonb, after_id uuid DEFAULT NULL::uuid, '
                       'max_rows integer DEFAULT 50, scan_limit integer DEFAULT 10000', 'SETOF jobq_job_summary'),
    ('jobq_get_job', 'job_id uuid', 'SETOF jobq_jobs'),
    ('jobq_health', 'stuck_after interval DEFAULT ''01:00:00''::interval, max_pending_age interval DEFAULT '
                    '''00:15:00''::interval, max_transaction_age interval DEFAULT ''00:05:00''::interval',
                    'TABLE(check_name text, queue text, severity text, value double precision, detail text)'),
    ('jobq_heartbeat', 'worker_id text, job_ids uuid[]', 'integer'),
    ('jobq_inserted', 'job_ids uuid[]', 'TABLE(ord integer, id uuid, inserted boolean)'),
    ('jobq_job_graph', 'job_id uuid', 'TABLE(id uuid, job_type text, status text, depends_on uuid[])'),
    ('jobq_job_status', 'job_ids uuid[]', 'TABLE(id uuid, status text, attempts integer, result jsonb, '
                        'last_error text, finished_at timestamp with time zone, cancel_requested boolean)'),
    ('jobq_jobs_page', 'status text, queue text DEFAULT NULL::text, job_type text DEFAULT NULL::text, '
                       'after_at timestamp with time zone DEFAULT NULL::timestamp with time zone, '
                       'after_id uuid DEFAULT NULL::uuid, max_rows integer DEFAULT 50, '
                       'scan_limit integer DEFAULT 10000', 'SETOF jobq_job_summary'),
    ('jobq_limit_usage', '', 'TABLE(limit_group text, limit_key text, running bigint, max_running integer, '
                         'starts_in_window bigint, max_starts integer, per interval, pending bigint, weight real)'),
    ('jobq_limits', '', 'TABLE(limit_group text, max_running integer, max_starts integer, per interval, share text)'),
    ('jobq_list_jobs', 'statuses text[] DEFAULT NULL::text[], job_type text DEFAULT NULL::text, '
                       'queue text DEFAULT NULL::text, max_rows integer DEFAULT 100', 'SETOF jobq_jobs'),
    ('jobq_maintain_history', 'lock_timeout interval DEFAULT ''00:00:00.1''::interval',
                              'TABLE(action text, partition_name text, detail text)'),
    ('jobq_maintain_indexes', 'lock_timeout interval DEFAULT ''00:00:00.05''::interval, '
                              'bloat_ratio real DEFAULT 4', 'TABLE(action text, index_name text, detail text)'),
    ('jobq_metrics', '', 'TABLE(metric text, labels jsonb, value double precision)'),
    ('jobq_metrics_forget', '', 'bigint'),
    ('jobq_metrics_recount', '', 'bigint'),
    ('jobq_names', '', 'TABLE(kind text, name text)'),
    ('jobq_pause', 'queue text, reason text DEFAULT NULL::text', 'boolean'),
    ('jobq_prune', 'older_than interval DEFAULT ''7 days''::interval, statuses text[] DEFAULT ''{succeeded}''::text[], batch_size integer DEFAULT NULL::integer', 'bigint'),
    ('jobq_queue_summary', 'recent interval DEFAULT ''00:05:00''::interval',
                           'TABLE(queue text, available bigint, scheduled bigint, processing bigint, failed bigint, '
                           'dead_letter bigint, cancelled bigint, oldest_available_at timestamp with time zone, '
                           'succeeded_recent bigint, paused boolean)'),
    ('jobq_queues', '', 'TABLE(queue text, paused boolean, paused_at timestamp with time zone, '
                    'reason text, pending bigint, processing bigint)'),
    ('jobq_release', 'job_ids uuid[], worker_id text', 'integer'),
    ('jobq_release_orphans', 'worker_id text, job_ids uuid[]', 'integer'),
    ('jobq_requeue_dead_letter', 'job_id uuid', 'boolean'),
    ('jobq_requeue_dead_letters', 'job_type text DEFAULT NULL::text, queue text DEFAULT NULL::text, include_cancelled boolean DEFAULT false, reason text DEFAULT NULL::text', 'integer'),
    ('jobq_resume', 'queue text', 'boolean'),
    ('jobq_schedule', 'name text, cron text, job_type text, payload jsonb DEFAULT ''{}''::jsonb, '
                      'timezone text DEFAULT ''UTC''::text, queue text DEFAULT ''default''::text, '
                      'priority integer DEFAULT 0, max_attempts integer DEFAULT 5, '
                      'catch_up text DEFAULT ''latest''::text, paused boolean DEFAULT false', 'timestamp with time zone'),
    ('jobq_schedule_run_now', 'name text', 'uuid'),
    ('jobq_schedules', '', 'TABLE(name text, cron text, timezone text, job_type text, payload jsonb, '
                       'queue text, priority integer, max_attempts integer, catch_up text, paused boolean, '
                       'next_run_at timestamp with time zone, next_run_local timestamp without time zone, '
                       'created_at timestamp with time zone, updated_at timestamp with time zone, '
                       'last_fired_at timestamp with time zone, last_job_id uuid)'),
    ('jobq_set_limit', 'limit_group text, max_running integer DEFAULT NULL::integer, '
                       'max_starts integer DEFAULT NULL::integer, per interval DEFAULT NULL::interval, '
                       'share text DEFAULT NULL::text', 'void'),
    ('jobq_set_retention', 'status text, keep interval DEFAULT NULL::interval, partition_days integer DEFAULT NULL::integer',
                           'SETOF jobq_retention'),
    ('jobq_set_weight', 'limit_group text, limit_key text, weight real DEFAULT 1', 'void'),
    ('jobq_stats', '', 'TABLE(queue text, job_type text, status text, jobs bigint, oldest_available_at timestamp with time zone)'),
    ('jobq_throughput', 'since interval DEFAULT ''01:00:00''::interval, bucket interval DEFAULT ''00:01:00''::interval',
                        'TABLE(bucket_start timestamp with time zone, succeeded bigint, failed bigint, '
                        'dead_letter bigint, cancelled bigint, failed_attempts bigint)'),
    ('jobq_tick', '', 'TABLE(schedule text, fire_at timestamp with time zone, job_id uuid)'),
    ('jobq_unschedule', 'name text', 'boolean'),
    ('jobq_unserved_job_types', 'idle interval DEFAULT ''00:15:00''::interval',
                                'TABLE(queue text, job_type text, jobs bigint, oldest_available_at timestamp with time zone)'),
    ('jobq_workers_summary', '', 'TABLE(worker_id text, job_types text[], queues text[], '
                             'first_claim_at timestamp with time zone, last_claim_at timestamp with time zone, '
                             'jobs_held bigint, stale_jobs bigint, last_heartbeat_at timestamp with time zone, '
                             'lock_expires_at timestamp with time zone, held_job_ids uuid[])')
    $$,
    'every function has the documented argument names, defaults and result'
);

SELECT function_returns('public', 'jobq_enqueue', ARRAY['text', 'jsonb', 'text', 'integer', 'timestamp with time zone', 'integer', 'text', 'text', 'text', 'uuid[]', 'text'], 'uuid');
SELECT function_returns('public', 'jobq_enqueue_many', ARRAY['jsonb'], 'setof record');
SELECT function_returns('public', 'jobq_enqueue_arrays', ARRAY['text[]', 'jsonb[]', 'text[]', 'integer[]', 'timestamp with time zone[]', 'integer[]', 'text[]', 'text[]', 'text[]'], 'setof record');
SELECT function_returns('public', 'jobq_dequeue', ARRAY['text', 'text[]', 'integer', 'interval', 'text[]'], 'setof jobq_jobs');
SELECT function_returns('public', 'jobq_complete', ARRAY['uuid', 'text', 'integer', 'jsonb'], 'boolean');
SELECT function_returns('public', 'jobq_complete_many', ARRAY['uuid[]', 'text', 'integer[]', 'jsonb[]'], 'integer');
SELECT function_returns('public', 'jobq_cancel', ARRAY['uuid[]', 'text'], 'setof record');
SELECT function_returns('public', 'jobq_cancel_requested', ARRAY['uuid[]'], 'setof uuid');
SELECT function_returns('public', 'jobq_job_status', ARRAY['uuid[]'], 'setof record');
SELECT function_returns('public', 'jobq_inserted', ARRAY['uuid[]'], 'setof record');
SELECT function_returns('public', 'jobq_await', ARRAY['uuid[]', 'interval'], 'setof record');
SELECT function_returns('public', 'jobq_fail', ARRAY['uuid', 'text', 'text', 'boolean', 'interval', 'integer'], 'text');
SELECT function_returns('public', 'jobq_fail_many', ARRAY['uuid[]', 'text', 'text[]', 'boolean[]', 'interval[]', 'integer[]'], 'setof record');
SELECT function_returns('public', 'jobq_heartbeat', ARRAY['text', 'uuid[]'], 'integer');
SELECT function_returns('public', 'jobq_release', ARRAY['uuid[]', 'text'], 'integer');
SELECT function_returns('public', 'jobq_release_orphans', ARRAY['text', 'uuid[]'], 'integer');
SELECT function_returns('public', 'jobq_requeue_dead_letter', ARRAY['uuid'], 'boolean');
SELECT function_returns('public', 'jobq_requeue_dead_letters', ARRAY['text', 'text', 'boolean', 'text'], 'integer');
SELECT function_returns('public', 'jobq_stats', ARRAY[]::text[], 'setof record');
SELECT function_returns('public', 'jobq_prune', ARRAY['interval', 'text[]', 'integer'], 'bigint');
SELECT function_returns('public', 'jobq_configure', ARRAY['integer', 'boolean', 'integer'], 'jsonb');
SELECT function_returns('public', 'jobq_metrics_forget', ARRAY[]::text[], 'bigint');
SELECT function_returns('public', 'jobq_metrics', ARRAY[]::text[], 'setof record');
SELECT function_returns('public', 'jobq_metrics_recount', ARRAY[]::text[], 'bigint');
SELECT function_returns('public', 'jobq_list_jobs', ARRAY['text[]', 'text', 'text', 'integer'], 'setof jobq_jobs');
SELECT function_returns('public', 'jobq_health', ARRAY['interval', 'interval', 'interval'], 'setof record');

-- Security: every public function runs as its owner with the search_path of its schema.
SELECT is_definer('public', 'jobq_enqueue', ARRAY['text', 'jsonb', 'text', 'integer', 'timestamp with time zone', 'integer', 'text', 'text', 'text', 'uuid[]', 'text']);
SELECT is_definer('public', 'jobq_enqueue_many', ARRAY['jsonb']);
SELECT is_definer('public', 'jobq_enqueue_arrays', ARRAY['text[]', 'jsonb[]', 'text[]', 'integer[]', 'timestamp with time zone[]', 'integer[]', 'text[]', 'text[]', 'text[]']);
SELECT is_definer('public', 'jobq_dequeue', ARRAY['text', 'text[]', 'integer', 'interval', 'text[]']);
SELECT is_definer('public', 'jobq_complete', ARRAY['uuid', 'text', 'integer', 'jsonb']);
SELECT is_definer('public', 'jobq_complete_many', ARRAY['uuid[]', 'text', 'integer[]', 'jsonb[]']);
SELECT is_definer('public', 'jobq_complete_and_claim', ARRAY['uuid[]', 'text', 'integer[]', 'jsonb[]', 'text[]', 'integer', 'interval', 'text[]']);
SELECT is_definer('public', 'jobq_cancel', ARRAY['uuid[]', 'text']);
SELECT is_definer('public', 'jobq_cancel_requested', ARRAY['uuid[]']);
SELECT is_definer('public', 'jobq_job_status', ARRAY['uuid[]']);
SELECT is_definer('public', 'jobq_inserted', ARRAY['uuid[]']);
SELECT is_definer('public', 'jobq_await', ARRAY['uuid[]', 'interval']);
SELECT isnt_definer('public', 'jobq__event_channel', ARRAY['text']);
SELECT isnt_definer('public', 'jobq__complete_rows', ARRAY['text', 'uuid[]', 'text', 'integer[]', 'jsonb[]']);
SELECT isnt_definer('public', 'jobq__notify_events', ARRAY['text', 'text[]']);
-- A trigger function runs as whoever commits: it must be the owner to write the jobs.
SELECT is_definer('public', 'jobq__cancel_apply', ARRAY[]::text[]);
SELECT is_definer('public', 'jobq_fail', ARRAY['uuid', 'text', 'text', 'boolean', 'interval', 'integer']);
SELECT is_definer('public', 'jobq_fail_many', ARRAY['uuid[]', 'text', 'text[]', 'boolean[]', 'interval[]', 'integer[]']);
SELECT is_definer('public', 'jobq_heartbeat', ARRAY['text', 'uuid[]']);
SELECT is_definer('public', 'jobq_release', ARRAY['uuid[]', 'text']);
SELECT is_definer('public', 'jobq_release_orphans', ARRAY['text', 'uuid[]']);
SELECT is_definer('public', 'jobq_requeue_dead_letter', ARRAY['uuid']);
SELECT is_definer('public', 'jobq_requeue_dead_letters', ARRAY['text', 'text', 'boolean', 'text']);
SELECT is_definer('public', 'jobq_stats', ARRAY[]::name[]);
SELECT is_definer('public', 'jobq_prune', ARRAY['interval', 'text[]', 'integer']);
SELECT is_definer('public', 'jobq_configure', ARRAY['integer', 'boolean', 'integer']);
SELECT is_definer('public', 'jobq_metrics_forget', ARRAY[]::name[]);
SELECT is_definer('public', 'jobq_metrics', ARRAY[]::name[]);
SELECT is_definer('public', 'jobq_metrics_recount', ARRAY[]::name[]);
SELECT is_definer('public', 'jobq_list_jobs', ARRAY['text[]', 'text', 'text', 'integer']);
SELECT is_definer('public', 'jobq_health', ARRAY['interval', 'interval', 'interval']);
SELECT is_definer('public', 'jobq_queue_summary', ARRAY['interval']);
SELECT is_definer('public', 'jobq_jobs_page', ARRAY['text', 'text', 'text', 'timestamp with time zone', 'uuid', 'integer', 'integer']);
SELECT isnt_definer('public', 'jobq__job_argument_problem', ARRAY['text', 'text', 'text', 'integer', 'integer']);
SELECT isnt_definer('public', 'jobq__statuses', ARRAY['boolean']);
SELECT isnt_definer('public', 'jobq__retry_at', ARRAY['timestamp with time zone', 'integer', 'interval']);
SELECT isnt_definer('public', 'jobq__schedule_fire', ARRAY['text', 'text', 'jsonb', 'text', 'integer', 'integer', 'timestamp with time zone']);
SELECT isnt_definer('public', 'jobq__audit', ARRAY['text', 'uuid[]', 'uuid[]', 'text', 'jsonb']);
SELECT isnt_definer('public', 'jobq__blank', ARRAY['text']);
SELECT isnt_definer('public', 'jobq__worker_id_error', ARRAY['text']);
SELECT isnt_definer('public', 'jobq__append_error', ARRAY['jsonb', 'jsonb']);
SELECT isnt_definer('public', 'jobq__error_entry', ARRAY['integer', 'jsonb', 'text', 'text', 'text']);
SELECT isnt_definer('public', 'jobq__channel', ARRAY[]::name[]);
SELECT isnt_definer('public', 'jobq__notify', ARRAY['text[]']);
SELECT isnt_definer('public', 'jobq__uuid_v7', ARRAY[]::name[]);
SELECT isnt_definer('public', 'jobq__uuid_v7_many', ARRAY['integer']);
SELECT isnt_definer('public', 'jobq__insert_jobs', ARRAY['text[]', 'jsonb[]', 'text[]', 'integer[]', 'timestamp with time zone[]', 'integer[]', 'text[]', 'text[]', 'text[]']);
SELECT is_definer('public', 'jobq_schedule', ARRAY['text', 'text', 'text', 'jsonb', 'text', 'text', 'integer', 'integer', 'text', 'boolean']);
SELECT is_definer('public', 'jobq_unschedule', ARRAY['text']);
SELECT is_definer('public', 'jobq_schedule_run_now', ARRAY['text']);
SELECT is_definer('public', 'jobq_schedules', ARRAY[]::name[]);
SELECT is_definer('public', 'jobq_tick', ARRAY[]::name[]);
SELECT isnt_definer('public', 'jobq__cron_parse', ARRAY['text']);
SELECT isnt_definer('public', 'jobq__cron_next', ARRAY['bigint[]', 'text', 'timestamp with time zone']);
SELECT isnt_definer('public', 'jobq__cron_fires', ARRAY['bigint[]', 'text', 'timestamp with time zone', 'timestamp with time zone', 'integer']);
SELECT isnt_definer('public', 'jobq__tick', ARRAY['timestamp with time zone']);
SELECT is_definer('public', 'jobq_get_job', ARRAY['uuid']);
SELECT is_definer('public', 'jobq_find_jobs', ARRAY['uuid', 'text', 'text', 'text', 'text[]', 'timestamp with time zone', 'timestamp with time zone', 'timestamp with time zone', 'timestamp with time zone', 'jsonb', 'uuid', 'integer', 'integer']);
SELECT is_definer('public', 'jobq_act_on_jobs', ARRAY['text', 'uuid[]', 'text']);
SELECT is_definer('public', 'jobq_audit_log', ARRAY['bigint', 'integer']);
SELECT is_definer('public', 'jobq_error_summary', ARRAY['interval', 'integer']);
SELECT is_definer('public', 'jobq_throughput', ARRAY['interval', 'interval']);
SELECT is_definer('public', 'jobq_names', ARRAY[]::name[]);
SELECT isnt_definer('public', 'jobq__error_line', ARRAY['text']);
SELECT is_definer('public', 'jobq_unserved_job_types', ARRAY['interval']);
SELECT is_definer('public', 'jobq_workers_summary', ARRAY[]::name[]);
SELECT is_definer('public', 'jobq_set_limit', ARRAY['text', 'integer', 'integer', 'interval', 'text']);
SELECT is_definer('public', 'jobq_set_weight', ARRAY['text', 'text', 'real']);
SELECT is_definer('public', 'jobq_limits', ARRAY[]::name[]);
SELECT is_definer('public', 'jobq_limit_usage', ARRAY[]::name[]);
SELECT function_returns('public', 'jobq_set_limit', ARRAY['text', 'integer', 'integer', 'interval', 'text'], 'void');
SELECT function_returns('public', 'jobq_set_weight', ARRAY['text', 'text', 'real'], 'void');
SELECT function_returns('public', 'jobq_limits', ARRAY[]::text[], 'setof record');
SELECT function_returns('public', 'jobq_limit_usage', ARRAY[]::text[], 'setof record');
SELECT isnt_definer('public', 'jobq__worker_seen', ARRAY['text', 'text[]', 'text[]']);
SELECT isnt_definer('public', 'jobq__limit_argument_problem', ARRAY['text', 'text']);
SELECT isnt_definer('public', 'jobq__claim_limited', ARRAY['text', 'text[]', 'text[]', 'integer', 'bigint[]', 'bigint[]', 'timestamp with time zone', 'text[]']);
SELECT isnt_definer('public', 'jobq__available', ARRAY['boolean']);

SELECT is_empty(
    $$SELECT p.oid::regprocedure FROM pg_proc AS p
      WHERE p.pronamespace = 'public'::regnamespace AND p.proname NOT LIKE 'jobq\_\_%'
        AND NOT coalesce(p.proconfig, '{}') @> ARRAY['search_path=public, pg_temp']$$,
    'every public function has search_path fixed to its own schema, then pg_temp (last)'
);
SELECT is_empty(
    $$SELECT p.oid::regprocedure FROM pg_proc AS p
      WHERE p.pronamespace = 'public'::regnamespace AND p.prosecdef
        AND NOT EXISTS (SELECT 1 FROM unnest(p.proconfig) AS c WHERE c LIKE 'search_path=%')$$,
    'no SECURITY DEFINER function without a fixed search_path'
);

-- 22004 (null_value_not_allowed) is a NULL payload (of jobq_enqueue, of
-- jobq_schedule, whose jobs jobq_enqueue's rules bind, and of an element of
-- jobq_enqueue_arrays' payloads), and nothing else: every other bad argument is 22023.
SELECT is_empty(
    $$SELECT p.proname FROM pg_proc AS p
      WHERE p.pronamespace = 'public'::regnamespace
        AND p.proname NOT IN ('jobq_enqueue', 'jobq_schedule', 'jobq_enqueue_arrays')
        AND p.prosrc ~* '(null_value_not_allowed|22004)'$$,
    '22004 is raised by jobq_enqueue, jobq_schedule and jobq_enqueue_arrays only (a NULL payload)'
);

------------------------------------------------------------------------------------------
-- Tables and columns
------------------------------------------------------------------------------------------

-- The partitions of jobq_jobs_history (jobq__history_*) come and go with the days
-- (jobq_maintain_history): they are its parts, not tables of the API.
SELECT set_eq(
    $$SELECT c.relname::text FROM pg_class AS c
      WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
        AND NOT c.relispartition$$,
    ARRAY['jobq_jobs', 'jobq_settings', 'jobq_migrations', 'jobq_schedules',
          'jobq_workers', 'jobq_metric_counters', 'jobq_metric_deltas',
          'jobq_metric_labels', 'jobq_limits', 'jobq_limit_keys', 'jobq_limit_starts',
          'jobq_cancel_requests', 'jobq__migrate_lock', 'jobq_awaits', 'jobq_jobs_history',
          'jobq_retention', 'jobq_paused_queues', 'jobq_job_dependencies', 'jobq_audit',
          'jobq_index_rebuilds'],
    'schema public has exactly the jobq tables');
SELECT col_is_pk('public', 'jobq_metric_counters', ARRAY['queue', 'job_type', 'shard'],
                 'jobq_metric_counters: one row per (queue, job_type, shard)');
SELECT hasnt_pk('public', 'jobq_metric_deltas', 'jobq_metric_deltas is appended to, never looked up');
SELECT columns_are('public', 'jobq_limits', ARRAY[
    'limit_group', 'max_running', 'max_starts', 'per', 'updated_at', 'share', 'turn_key'
]);
SELECT columns_are('public', 'jobq_limit_keys', ARRAY[
    'limit_group', 'limit_key', 'started', 'last_start_at', 'weight', 'pass'
]);
SELECT columns_are('public', 'jobq_limit_starts', ARRAY[
    'limit_group', 'limit_key', 'total', 'started', 'started_at'
]);
SELECT columns_are('public', 'jobq_awaits', ARRAY['job_id', 'awaited_at']);
SELECT hasnt_pk('public', 'jobq_awaits', 'jobq_awaits has no key: registering never waits for another transaction');
SELECT columns_are('public', 'jobq_workers', ARRAY[
    'worker_id', 'job_types', 'queues', 'first_claim_at', 'last_claim_at'
]);
SELECT col_is_pk('public', 'jobq_workers', 'worker_id', 'jobq_workers is keyed by worker_id');
SELECT has_table('public', 'jobq_jobs', 'table jobq_jobs exists');
SELECT has_table('public', 'jobq_settings', 'table jobq_settings exists');
SELECT has_table('public', 'jobq_migrations', 'table jobq_migrations exists');

SELECT columns_are('public', 'jobq_jobs', ARRAY[
    'id', 'queue', 'job_type', 'payload', 'idempotency_key', 'status', 'priority', 'attempts',
    'max_attempts', 'available_at', 'locked_at', 'locked_by', 'last_error', 'errors',
    'created_at', 'updated_at', 'finished_at', 'scheduled', 'result', 'cancel_requested_at',
    'cancel_reason', 'limit_group', 'limit_key', 'claimed_at', 'locked_until', 'waiting_on',
    'has_dependents'
]);
SELECT columns_are('public', 'jobq_settings', ARRAY['singleton', 'max_payload_bytes', 'metrics', 'lock_seed',
                                                  'metrics_label_sets']);
SELECT columns_are('public', 'jobq_migrations', ARRAY['version', 'checksum', 'applied_at', 'breaking']);

-- jobq_jobs: each column's type, NOT NULL and default, which callers rely on
SELECT results_eq(
    $$SELECT a.attname::text COLLATE "default", format_type(a.atttypid, a.atttypmod), a.attnotnull,
             CASE WHEN a.attname <> 'id' THEN pg_get_expr(d.adbin, d.adrelid) END COLLATE "default"
      FROM pg_attribute AS a
      LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE a.attrelid = 'jobq_jobs'::regclass AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum$$,
    $$VALUES
    ('id'::text,        'uuid'::text,                     true,  NULL::text),  -- below
    ('queue',           'text',                           true,  '''default''::text'),
    ('job_type',        'text',                           true,  NULL),
    ('payload',         'jsonb',                          true,  '''{}''::jsonb'),
    ('idempotency_key', 'text',                           false, NULL),
    ('status',          'text',                           true,  '''pending''::text'),
    ('priority',        'integer',                        true,  '0'),
    ('attempts',        'integer',                        true,  '0'),
    ('max_attempts',    'integer',                        true,  '5'),
    ('available_at',    'timestamp with time zone',       true,  'now()'),
    ('locked_at',       'timestamp with time zone',       false, NULL),
    ('locked_by',       'text',                           false, NULL),
    ('last_error',      'text',                           false, NULL),
    ('errors',          'jsonb',                          true,  '''[]''::jsonb'),
    ('created_at',      'timestamp with time zone',       true,  'now()'),
    ('updated_at',      'timestamp with time zone',       true,  'now()'),
    ('finished_at',     'timestamp with time zone',       false, NULL),
    ('scheduled',       'boolean',                        true,  'false'),
    ('result',          'jsonb',                          false, NULL),
    ('cancel_requested_at', 'timestamp with time zone',   false, NULL),
    ('cancel_reason',   'text',                           false, NULL),
    ('limit_group',     'text',                           false, NULL),
    ('limit_key',       'text',                           false, NULL),
    ('claimed_at',      'timestamp with time zone',       false, NULL),
    ('locked_until',    'timestamp with time zone',       false, NULL),
    ('waiting_on',      'integer',                        true,  '0'),
    ('has_dependents',  'boolean',                        true,  'false')
    $$,
    'jobq_jobs columns: type, NOT NULL and default as documented'
);

SELECT col_type_is('public', 'jobq_jobs', 'id', 'uuid', 'jobq_jobs.id is uuid');
SELECT col_is_pk('public', 'jobq_jobs', 'id', 'jobq_jobs.id is the primary key');
SELECT matches(
    (SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef AS d
     WHERE d.adrelid = 'jobq_jobs'::regclass AND d.adnum = 1),
    '^\(encode\(set_bit\(set_bit\("overlay"\(uuid_send\(gen_random_uuid\(\)\), substr\(int8send\(',
    'jobq_jobs.id defaults to a UUID version 7 made from gen_random_uuid() and the time');
INSERT INTO jobq_jobs (job_type) VALUES ('api_surface_v7');
SELECT ok(
    (SELECT substr(j.id::text, 15, 1) = '7'
            AND ('x' || lpad(replace(substr(j.id::text, 1, 13), '-', ''), 16, '0'))::bit(64)::bigint
                BETWEEN (extract(epoch FROM now()) * 1000)::bigint - 1
                    AND (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 1
     FROM jobq_jobs AS j WHERE j.job_type = 'api_surface_v7'),
    '... its version nibble is 7 and its first 48 bits are the time of the insert in milliseconds'
);
SELECT is((SELECT count(DISTINCT id)::int FROM (SELECT jobq__uuid_v7() AS id FROM generate_series(1, 1000)) AS g), 1000,
          'jobq__uuid_v7 makes distinct ids within one millisecond');
SELECT is((SELECT count(*)::int FROM (SELECT jobq__uuid_v7() AS id FROM generate_series(1, 100)) AS g
           WHERE substr(id::text, 15, 1) = '7' AND substr(id::text, 20, 1) IN ('8', '9', 'a', 'b')), 100,
          'jobq__uuid_v7: version 7, variant RFC 9562 (10xx)');
SELECT is((SELECT count(DISTINCT id)::int FROM pg_catalog.unnest(jobq__uuid_v7_many(100000)) AS id), 100000,
          'jobq__uuid_v7_many: distinct ids');
SELECT ok((SELECT bool_and(id::text ~ '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$')
           FROM pg_catalog.unnest(jobq__uuid_v7_many(1000)) AS id),
          'jobq__uuid_v7_many: version 7, variant RFC 9562 (10xx)');
SELECT ok((SELECT a = (SELECT pg_catalog.array_agg(x ORDER BY x) FROM pg_catalog.unnest(a) AS x)
           FROM (SELECT jobq__uuid_v7_many(5000) AS a) AS m),
          'jobq__uuid_v7_many: increasing in array order');
SELECT ok((SELECT ('x' || lpad(replace(substr(id::text, 1, 13), '-', ''), 16, '0'))::bit(64)::bigint
                BETWEEN (extract(epoch FROM now()) * 1000)::bigint - 1
                    AND (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 1
           FROM pg_catalog.unnest(jobq__uuid_v7_many(3)) AS id LIMIT 1),
          'jobq__uuid_v7_many: its first 48 bits are the time in milliseconds, as jobq__uuid_v7''s');
DELETE FROM jobq_jobs WHERE job_type = 'api_surface_v7';
SELECT col_type_is('public', 'jobq_jobs', 'payload', 'jsonb', 'jobq_jobs.payload is jsonb');
SELECT col_default_is('public', 'jobq_jobs', 'payload', '{}'::jsonb, 'jobq_jobs.payload defaults to {}');
SELECT col_type_is('public', 'jobq_jobs', 'errors', 'jsonb', 'jobq_jobs.errors is jsonb');
SELECT col_default_is('public', 'jobq_jobs', 'errors', '[]'::jsonb, 'jobq_jobs.errors defaults to []');
SELECT col_type_is('public', 'jobq_jobs', 'status', 'text', 'jobq_jobs.status is text (not an enum)');
SELECT col_default_is('public', 'jobq_jobs', 'status', 'pending'::text, 'jobq_jobs.status defaults to pending');
SELECT col_type_is('public', 'jobq_jobs', 'available_at', 'timestamp with time zone', 'jobq_jobs.available_at is timestamptz');
SELECT col_default_is('public', 'jobq_jobs', 'available_at', 'now()', 'jobq_jobs.available_at defaults to now()');
SELECT col_default_is('public', 'jobq_jobs', 'max_attempts', 5, 'jobq_jobs.max_attempts defaults to 5');
SELECT col_default_is('public', 'jobq_jobs', 'queue', 'default'::text, 'jobq_jobs.queue defaults to default');
SELECT is(
    (SELECT pg_get_indexdef('jobq_jobs_idempotency_key_key'::regclass)),
    'CREATE UNIQUE INDEX jobq_jobs_idempotency_key_key ON public.jobq_jobs USING btree (job_type, idempotency_key) WHERE (idempotency_key IS NOT NULL)',
    'jobq_jobs.idempotency_key is unique per job_type (a partial unique index: NULLs never collide, keyless jobs cost no entry)');
SELECT col_is_null('public', 'jobq_jobs', 'idempotency_key', 'jobq_jobs.idempotency_key is nullable (NULLs never collide)');

SELECT col_type_is('public', 'jobq_settings', 'max_payload_bytes', 'integer', 'jobq_settings.max_payload_bytes is integer');
SELECT col_default_is('public', 'jobq_settings', 'max_payload_bytes', 1048576, 'jobq_settings.max_payload_bytes defaults to 1 MiB');
SELECT is((SELECT count(*)::int FROM jobq_settings), 1, 'jobq_settings has its one row');
SELECT col_type_is('public', 'jobq_migrations', 'version', 'text', 'jobq_migrations.version is text');
SELECT col_type_is('public', 'jobq_migrations', 'checksum', 'text', 'jobq_migrations.checksum is text');
SELECT col_type_is('public', 'jobq_migrations', 'applied_at', 'timestamp with time zone', 'jobq_migrations.applied_at is timestamptz');
SELECT col_type_is('public', 'jobq_migrations', 'breaking', 'boolean', 'jobq_migrations.breaking is boolean');
SELECT col_default_is('public', 'jobq_migrations', 'breaking', false, 'jobq_migrations.breaking defaults to false');
SELECT ok((SELECT bool_and(checksum ~ '^[0-9a-f]{64}$') FROM jobq_migrations)
          AND EXISTS (SELECT 1 FROM jobq_migrations WHERE version = '0001_jobq_baseline'),
          'jobq_migrations records 0001_jobq_baseline, each migration with a sha256');

------------------------------------------------------------------------------------------
-- Named constraints, and that they hold
------------------------------------------------------------------------------------------

SELECT set_eq(
    $$SELECT conrelid::regclass::text, conname::text COLLATE "default" FROM pg_constraint
      WHERE conrelid IN ('jobq_jobs'::regclass, 'jobq_settings'::regclass, 'jobq_migrations'::regclass)
        AND contype <> 'n'$$,
    $$VALUES ('jobq_jobs', 'jobq_jobs_pkey'),
             ('jobq_jobs', 'jobq_jobs_status_check'), ('jobq_jobs', 'jobq_jobs_max_attempts_check'),
             ('jobq_jobs', 'jobq_jobs_attempts_check'), ('jobq_jobs', 'jobq_jobs_claim_check'),
             ('jobq_jobs', 'jobq_jobs_finished_check'), ('jobq_jobs', 'jobq_jobs_cancel_check'),
             ('jobq_jobs', 'jobq_jobs_limit_key_needs_group'), ('jobq_jobs', 'jobq_jobs_waiting_check'),
             ('jobq_settings', 'jobq_settings_pkey'), ('jobq_settings', 'jobq_settings_singleton_check'),
             ('jobq_settings', 'jobq_settings_max_payload_bytes_check'),
             ('jobq_settings', 'jobq_settings_metrics_label_sets_check'),
             ('jobq_migrations', 'jobq_migrations_pkey')$$,
    'every constraint has its documented name'
);
SELECT has_check('public', 'jobq_jobs', 'jobq_jobs has CHECK constraints');

SELECT throws_ok($$INSERT INTO jobq_jobs (job_type, status) VALUES ('t', 'done')$$, '23514',
    'new row for relation "jobq_jobs" violates check constraint "jobq_jobs_status_check"',
    'jobq_jobs_status_check: only the six statuses');
SELECT lives_ok(
    $$INSERT INTO jobq_jobs (job_type, status, locked_at, locked_by, finished_at) VALUES
        ('t', 'pending', NULL, NULL, NULL), ('t', 'processing', now(), 'w', NULL),
        ('t', 'succeeded', NULL, NULL, now()), ('t', 'failed', NULL, NULL, now()),
        ('t', 'dead_letter', NULL, NULL, now()), ('t', 'cancelled', NULL, NULL, now())$$,
    'the six statuses are accepted');
SELECT throws_ok($$INSERT INTO jobq_jobs (job_type, status) VALUES ('t', 'cancelled')$$, '23514',
    'new row for relation "jobq_jobs" violates check constraint "jobq_jobs_finished_check"',
    'jobq_jobs_finished_check: a cancelled job has finished_at');
SELECT throws_ok($$INSERT INTO jobq_jobs (job_type, cancel_requested_at) VALUES ('t', now())$$, '23514',
    'new row for relation "jobq_jobs" violates check constraint "jobq_jobs_cancel_check"',
    'jobq_jobs_cancel_check: a pending job has no cancel request (it is never claimed after a cancel)');
SELECT lives_ok(
    $$INSERT INTO jobq_jobs (job_type, status, locked_at, locked_by, cancel_requested_at, cancel_reason)
      VALUES ('t', 'processing', now(), 'w', now(), 'why')$$,
    'a processing job may carry a cancel request');
SELECT throws_ok($$INSERT INTO jobq_jobs (job_type, max_attempts) VALUES ('t', 0)$$, '23514',
    'new row for relation "jobq_jobs" violates check constraint "jobq_jobs_max_attempts_check"',
    'jobq_jobs_max_attempts_check: max_attempts >= 1');
SELECT throws_ok($$INSERT INTO jobq_jobs (job_type, attempts) VALUES ('t', -1)$$, '23514',
    'new row for relation "jobq_jobs" violates check constraint "jobq_jobs_attempts_check"',
    'jobq_jobs_attempts_check: attempts >= 0');
SELECT throws_ok($$INSERT INTO jobq_jobs (job_type, status) VALUES ('t', 'processing')$$, '23514',
    'new row for relation "jobq_jobs" violates check constraint "jobq_jobs_claim_check"',
    'jobq_jobs_claim_check: processing needs a claim');
SELECT throws_ok($$INSERT INTO jobq_jobs (job_type, locked_at, locked_by) VALUES ('t', now(), 'w')$$, '23514',
    'new row for relation "jobq_jobs" violates check constraint "jobq_jobs_claim_check"',
    'jobq_jobs_claim_check: only processing has a claim');
SELECT throws_ok($$INSERT INTO jobq_jobs (job_type, status) VALUES ('t', 'succeeded')$$, '23514',
    'new row for relation "jobq_jobs" violates check constraint "jobq_jobs_finished_check"',
    'jobq_jobs_finished_check: a finished job has finished_at');
SELECT throws_ok($$INSERT INTO jobq_jobs (job_type, finished_at) VALUES ('t', now())$$, '23514',
    'new row for relation "jobq_jobs" violates check constraint "jobq_jobs_finished_check"',
    'jobq_jobs_finished_check: an unfinished job has none');
SELECT throws_ok($$INSERT INTO jobq_jobs (job_type, idempotency_key) VALUES ('t', 'k'), ('t', 'k')$$, '23505',
    'duplicate key value violates unique constraint "jobq_jobs_idempotency_key_key"',
    'jobq_jobs_idempotency_key_key: one job per key of one job type');
SELECT lives_ok($$INSERT INTO jobq_jobs (job_type, idempotency_key) VALUES ('t', 'k2'), ('u', 'k2')$$,
    'the same key under two job types is two jobs');
SELECT lives_ok($$INSERT INTO jobq_jobs (job_type, idempotency_key) VALUES ('t', NULL), ('t', NULL)$$,
    'NULL keys never collide');
SELECT throws_ok($$INSERT INTO jobq_jobs (job_type, limit_key) VALUES ('t', 'k')$$, '23514',
    'new row for relation "jobq_jobs" violates check constraint "jobq_jobs_limit_key_needs_group"',
    'jobq_jobs_limit_key_needs_group: a limit_key only within a limit_group');
SELECT set_eq(
    $$SELECT conrelid::regclass::text, conname::text COLLATE "default" FROM pg_constraint
      WHERE conrelid IN ('jobq_limits'::regclass, 'jobq_limit_keys'::regclass,
                         'jobq_limit_starts'::regclass)
        AND contype <> 'n'$$,
    $$VALUES ('jobq_limits', 'jobq_limits_pkey'), ('jobq_limits', 'jobq_limits_max_running_positive'),
             ('jobq_limits', 'jobq_limits_rate_complete'), ('jobq_limits', 'jobq_limits_some_limit'),
             ('jobq_limits', 'jobq_limits_share_known'),
             ('jobq_limit_keys', 'jobq_limit_keys_pkey'), ('jobq_limit_keys', 'jobq_limit_keys_weight_positive'), ('jobq_limit_starts', 'jobq_limit_starts_pkey')$$,
    'the limit tables'' constraints have their documented names'
);
SELECT throws_ok($$INSERT INTO jobq_limits (limit_group, max_running) VALUES ('g', 0)$$, '23514',
    'new row for relation "jobq_limits" violates check constraint "jobq_limits_max_running_positive"',
    'jobq_limits_max_running_positive: max_running >= 1');
SELECT throws_ok($$INSERT INTO jobq_limits (limit_group, max_starts) VALUES ('g', 5)$$, '23514',
    'new row for relation "jobq_limits" violates check constraint "jobq_limits_rate_complete"',
    'jobq_limits_rate_complete: max_starts needs per');
SELECT throws_ok($$INSERT INTO jobq_limits (limit_group) VALUES ('g')$$, '23514',
    'new row for relation "jobq_limits" violates check constraint "jobq_limits_some_limit"',
    'jobq_limits_some_limit: a row sets a limit');
SELECT throws_ok($$INSERT INTO jobq_settings (singleton) VALUES (false)$$, '23514',
    'new row for relation "jobq_settings" violates check constraint "jobq_settings_singleton_check"',
    'jobq_settings_singleton_check: no second settings row');
SELECT throws_ok($$UPDATE jobq_settings SET max_payload_bytes = 0$$, '23514',
    'new row for relation "jobq_settings" violates check constraint "jobq_settings_max_payload_bytes_check"',
    'jobq_settings_max_payload_bytes_check: the limit is positive');

------------------------------------------------------------------------------------------
-- Indexes: the partial indexes match what the claim and the recovery filter on
------------------------------------------------------------------------------------------

SELECT indexes_are('public', 'jobq_jobs', ARRAY[
    'jobq_jobs_pkey', 'jobq_jobs_idempotency_key_key', 'jobq_jobs_claim_idx',
    'jobq_jobs_scheduled_idx', 'jobq_jobs_limited_idx',
    'jobq_jobs_limit_running_idx', 'jobq_jobs_locked_until_idx', 'jobq_jobs_waiting_idx',
    'jobq_jobs_limited_turn_idx', 'jobq_jobs_later_names_idx'
]);
SELECT has_index('public', 'jobq_jobs', 'jobq_jobs_claim_idx',
                 ARRAY['hashtextextended(job_type, (0)::bigint)',
                       'hashtextextended(queue, (0)::bigint)', 'priority', 'available_at', 'id'],
                 'jobq_jobs_claim_idx on the hashes of (job_type, queue), priority, available_at, id');
SELECT has_index('public', 'jobq_jobs', 'jobq_jobs_scheduled_idx', 'available_at',
                 'jobq_jobs_scheduled_idx on (available_at)');
SELECT hasnt_index('public', 'jobq_jobs', 'jobq_jobs_succeeded_idx',
                   'no index of succeeded jobs on jobq_jobs: they live in jobq_jobs_history');
SELECT has_index('public', 'jobq_jobs', 'jobq_jobs_locked_until_idx', 'locked_until',
                 'jobq_jobs_locked_until_idx on (locked_until)');
SELECT hasnt_index('public', 'jobq_jobs', 'jobq_jobs_locked_idx',
                   'one index of processing jobs: no second one by locked_at');
SELECT hasnt_index('public', 'jobq_jobs', 'jobq_jobs_failed_idx',
                   'no index of failed jobs on jobq_jobs: they live in jobq_jobs_history');
SELECT results_eq(
    $$SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid)
      FROM pg_index WHERE indrelid = 'jobq_jobs'::regclass AND indpred IS NOT NULL
      ORDER BY 1$$,
    $$VALUES
    ('jobq_jobs_claim_idx'::text,
     'CREATE INDEX jobq_jobs_claim_idx ON public.jobq_jobs USING btree (hashtextextended(job_type, (0)::bigint), hashtextextended(queue, (0)::bigint), priority DESC, available_at, id) WITH (deduplicate_items=off) WHERE ((status = ''pending''::text) AND (NOT scheduled) AND (limit_group IS NULL))'::text),
    ('jobq_jobs_idempotency_key_key',
     'CREATE UNIQUE INDEX jobq_jobs_idempotency_key_key ON public.jobq_jobs USING btree (job_type, idempotency_key) WHERE (idempotency_key IS NOT NULL)'),
    ('jobq_jobs_later_names_idx',
     'CREATE INDEX jobq_jobs_later_names_idx ON public.jobq_jobs USING btree (job_type, queue) WHERE ((status = ''waiting''::text) OR ((status = ''pending''::text) AND scheduled))'),
    ('jobq_jobs_limit_running_idx',
     'CREATE INDEX jobq_jobs_limit_running_idx ON public.jobq_jobs USING btree (limit_group, COALESCE(limit_key, ''''::text)) WHERE ((status = ''processing''::text) AND (limit_group IS NOT NULL))'),
    ('jobq_jobs_limited_idx',
     'CREATE INDEX jobq_jobs_limited_idx ON public.jobq_jobs USING btree (job_type, queue, limit_group, COALESCE(limit_key, ''''::text), priority DESC, available_at, id) WITH (deduplicate_items=off) WHERE ((status = ''pending''::text) AND (NOT scheduled) AND (limit_group IS NOT NULL))'),
    ('jobq_jobs_limited_turn_idx',
     'CREATE INDEX jobq_jobs_limited_turn_idx ON public.jobq_jobs USING btree (limit_group, priority DESC, COALESCE(limit_key, ''''::text), available_at DESC, id DESC) WITH (deduplicate_items=off) WHERE ((status = ''pending''::text) AND (NOT scheduled) AND (limit_group IS NOT NULL))'),
    ('jobq_jobs_locked_until_idx',
     'CREATE INDEX jobq_jobs_locked_until_idx ON public.jobq_jobs USING btree (locked_until) WHERE (status = ''processing''::text)'),
    ('jobq_jobs_scheduled_idx',
     'CREATE INDEX jobq_jobs_scheduled_idx ON public.jobq_jobs USING btree (available_at) WHERE ((status = ''pending''::text) AND scheduled)'),
    ('jobq_jobs_waiting_idx',
     'CREATE INDEX jobq_jobs_waiting_idx ON public.jobq_jobs USING btree (created_at, id) WHERE (status = ''waiting''::text)')
    $$,
    'the partial indexes: the claim order per (job_type, queue) over pending jobs that are not scheduled, scheduled jobs by due time, locks of processing jobs, keys, the names of waiting jobs'
);

------------------------------------------------------------------------------------------
-- The private SQL helpers are inlined by the planner into their callers. A helper that is
-- not inlined runs through the SQL-function executor, whose plan of the body PL/pgSQL rebuilds
-- in every transaction, a large part of a single enqueue's server time (an IMMUTABLE helper
-- over a STABLE body is never inlined). Checked on the plan, not by time.
------------------------------------------------------------------------------------------

CREATE FUNCTION pg_temp.plan_of(query text) RETURNS text LANGUAGE plpgsql AS $fn$
DECLARE
    v_line text;
    v_plan text := '';
BEGIN
    FOR v_line IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || query LOOP
        v_plan := v_plan || v_line || E'\n';
    END LOOP;
    RETURN v_plan;
END;
$fn$;

SELECT unalike(
    pg_temp.plan_of($$SELECT jobq__job_argument_problem(g::text, 'q', NULL, 5, 0) FROM generate_series(1, 2) AS g$$),
    '%jobq__job_argument_problem%',
    'jobq__job_argument_problem is inlined into its caller (it is STABLE, like format() in its body)'
);
SELECT unalike(
    pg_temp.plan_of($$SELECT jobq__retry_at(now(), g, '10 seconds') FROM generate_series(1, 2) AS g$$),
    '%jobq__retry_at%',
    'jobq__retry_at is inlined into its caller'
);
SELECT unalike(
    pg_temp.plan_of($$SELECT jobq__error_entry(g, '"t"', 'w', 'e') FROM generate_series(1, 2) AS g$$),
    '%jobq__error_entry%',
    'jobq__error_entry is inlined into its caller'
);
SELECT unalike(
    pg_temp.plan_of($$SELECT jobq__uuid_v7() FROM generate_series(1, 2) AS g$$),
    '%jobq__uuid_v7%',
    'jobq__uuid_v7 is inlined into its caller'
);
SELECT unalike(
    pg_temp.plan_of($$SELECT jobq__channel() || g FROM generate_series(1, 2) AS g$$),
    '%jobq__channel%',
    'jobq__channel is inlined into its caller'
);
SELECT unalike(
    pg_temp.plan_of($$SELECT jobq__event_channel('done') || g FROM generate_series(1, 2) AS g$$),
    '%jobq__event_channel%',
    'jobq__event_channel is inlined into its caller'
);
SELECT unalike(
    pg_temp.plan_of($$SELECT jobq__blank(g::text) FROM generate_series(1, 2) AS g$$),
    '%jobq__blank%',
    'jobq__blank is inlined into its caller'
);
SELECT unalike(
    pg_temp.plan_of($$SELECT jobq__worker_id_error(g::text) FROM generate_series(1, 2) AS g$$),
    '%jobq_%',
    'jobq__worker_id_error is inlined into its caller, and jobq__blank into it'
);
SELECT unalike(
    pg_temp.plan_of($$SELECT jobq__append_error('[]', pg_catalog.to_jsonb(g)) FROM generate_series(1, 2) AS g$$),
    '%jobq__append_error%',
    'jobq__append_error is inlined into its caller'
);
SELECT unalike(
    pg_temp.plan_of($$SELECT jobq__limit_argument_problem(g::text, 'k') FROM generate_series(1, 2) AS g$$),
    '%jobq__%',
    'jobq__limit_argument_problem is inlined into its caller, and jobq__blank into it'
);

SELECT * FROM finish();
ROLLBACK;
