-- jobq_configure (admin): changes the settings of this installation and returns them all.
-- Settings live in this schema's jobq_settings (one row), so each tenant schema has its own,
-- and a producer, who may only call jobq_enqueue and jobq_enqueue_many, cannot change them.
--
-- metrics => true turns on the counting of jobq_metrics() (off on a new installation: it
-- costs a write in every counted call) and counts the gauge jobq_jobs anew
-- (jobq_metrics_recount), since status changes made while it was off were not counted;
-- metrics => false stops it (the counters stand still, the functions skip the upsert).
--
-- metrics_label_sets bounds the (queue, job_type) label sets counted under their own names
-- (jobq__metric_labels); lowering it admits no new ones until enough are forgotten
-- (jobq_metrics_forget), and keeps those admitted.
--! levels: admin
--! replaces: jobq_configure(integer)
--! replaces: jobq_configure(integer, boolean)

CREATE OR REPLACE FUNCTION jobq_configure(
    max_payload_bytes integer DEFAULT NULL,
    metrics boolean DEFAULT NULL,
    metrics_label_sets integer DEFAULT NULL
) RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_max_payload_bytes integer;
    v_metrics boolean;
    v_metrics_label_sets integer;
    v_settings jsonb;
    v_was boolean;
BEGIN
    IF jobq_configure.max_payload_bytes IS NOT NULL AND jobq_configure.max_payload_bytes < 1 THEN
        RAISE EXCEPTION 'jobq_configure: max_payload_bytes must be at least 1, got %',
            jobq_configure.max_payload_bytes
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF jobq_configure.metrics_label_sets NOT BETWEEN 0 AND 1000000 THEN
        RAISE EXCEPTION 'jobq_configure: metrics_label_sets must be between 0 and 1000000, got %',
            jobq_configure.metrics_label_sets
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT s.metrics INTO v_was FROM jobq_settings AS s FOR UPDATE;
    UPDATE jobq_settings AS s
    SET
        max_payload_bytes = coalesce(jobq_configure.max_payload_bytes, s.max_payload_bytes),
        metrics = coalesce(jobq_configure.metrics, s.metrics),
        metrics_label_sets = coalesce(jobq_configure.metrics_label_sets, s.metrics_label_sets)
    -- The settings are returned as columns and made into jsonb here: Citus refuses a STABLE
    -- function (jsonb_build_object) in RETURNING.
    RETURNING s.max_payload_bytes, s.metrics, s.metrics_label_sets
    INTO v_max_payload_bytes, v_metrics, v_metrics_label_sets;
    v_settings := pg_catalog.jsonb_build_object(
        'max_payload_bytes', v_max_payload_bytes,
        'metrics', v_metrics,
        'metrics_label_sets', v_metrics_label_sets
    );
    IF jobq_configure.metrics AND NOT v_was THEN
        PERFORM jobq_metrics_recount();
    END IF;
    RETURN v_settings;
END;
$$;

COMMENT ON FUNCTION jobq_configure(integer, boolean, integer) IS
'Admin only. Changes the settings of this installation and returns them all. Settings
live in this schema''s jobq_settings, so each tenant schema has its own.
Arguments: max_payload_bytes (the largest payload that jobq_enqueue, jobq_enqueue_many,
jobq_enqueue_arrays and jobq_schedule accept, and result that jobq_complete(_many) stores, in
bytes of its text form (octet_length(value::text), however compressed it is stored);
default 1048576; NULL leaves it as it is), metrics (whether the jobq
functions count what they do for jobq_metrics(); off on a new installation, since counting
costs a write in every counted call; false stops the counters, and true after false counts
the jobs again as jobq_metrics_recount() does; NULL leaves it), metrics_label_sets (how many
(queue, job_type) label sets jobq_metrics() counts under their own names, 0 to 1000000,
default 1000; the others are counted under the overflow label set, queue '''' and job_type
''''; lowering it keeps the label sets already admitted until jobq_metrics_forget() removes
them; NULL leaves it).
Result: every setting, as a JSON object ({"max_payload_bytes": n, "metrics": false,
"metrics_label_sets": 1000}).
Errors: 22023 max_payload_bytes < 1, metrics_label_sets outside 0..1000000.
Concurrency: turning metrics on again waits for the writers of jobq_jobs of the moment, and
blocks new ones while it counts (see jobq_metrics_recount).';

REVOKE EXECUTE ON FUNCTION jobq_configure(integer, boolean, integer) FROM PUBLIC;
