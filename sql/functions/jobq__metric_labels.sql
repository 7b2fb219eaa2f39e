-- jobq__metric_labels (private): the label set under which jobq_metrics() counts each distinct
-- (queue, job_type) of the given jobs: its own, when it is admitted to jobq_metric_labels or
-- is admitted now (while fewer than jobq_settings.metrics_label_sets distinct pairs are), else
-- the overflow label set, queue '' and job_type '' (no real queue or job type is blank). So
-- the label sets a scrape shows are at most the bound plus one, whatever names producers use.
--
-- New pairs are admitted in (queue, job_type) order, within the room left when the call
-- starts. Two sessions admitting at the same moment may each take the last room (a count,
-- then an insert, with no lock: a lock would make counting wait for another session's
-- transaction), so the bound can be passed by the number of sessions that admit a pair at
-- that moment, never more. The room is counted only when a pair is new.
--
-- Called by jobq__metrics_count for the pairs its backend has no counter row for, and by
-- jobq_metrics_recount. Not SECURITY DEFINER and no SET clause: it runs inside those, with
-- their search_path, and is granted to nobody.

CREATE OR REPLACE FUNCTION jobq__metric_labels(
    queues text[],
    job_types text[]
) RETURNS TABLE (queue text, job_type text, label_queue text, label_job_type text)
LANGUAGE plpgsql
VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_pairs text[];
    v_types text[];
    v_known boolean[];
    v_room bigint;
BEGIN
    SELECT
        pg_catalog.array_agg(p.queue ORDER BY p.queue, p.job_type),
        pg_catalog.array_agg(p.job_type ORDER BY p.queue, p.job_type),
        pg_catalog.array_agg(
            (p.queue = '' AND p.job_type = '') OR EXISTS (
                SELECT FROM jobq_metric_labels AS l
                WHERE l.queue = p.queue AND l.job_type = p.job_type
            )
            ORDER BY p.queue, p.job_type
        )
    INTO v_pairs, v_types, v_known
    FROM (
        SELECT DISTINCT r.queue, r.job_type
        FROM ROWS FROM (
            pg_catalog.unnest(jobq__metric_labels.queues),
            pg_catalog.unnest(jobq__metric_labels.job_types)
        ) AS r (queue, job_type)
    ) AS p;

    IF v_pairs IS NULL THEN
        RETURN;
    END IF;

    IF FALSE = ANY (v_known) THEN
        SELECT greatest(
            s.metrics_label_sets - (
                SELECT pg_catalog.count(*)
                FROM (SELECT DISTINCT l.queue, l.job_type FROM jobq_metric_labels AS l) AS d
            ),
            0
        )
        INTO v_room
        FROM jobq_settings AS s
        WHERE s.singleton;

        WITH admitted AS (
            INSERT INTO jobq_metric_labels AS l (queue, job_type)
            SELECT n.queue, n.job_type
            FROM ROWS FROM (
                pg_catalog.unnest(v_pairs), pg_catalog.unnest(v_types), pg_catalog.unnest(v_known)
            ) WITH ORDINALITY AS n (queue, job_type, known, ord)
            WHERE NOT n.known
            ORDER BY n.ord
            LIMIT v_room
            RETURNING l.queue, l.job_type
        )

        SELECT pg_catalog.array_agg(
            k.known OR EXISTS (
                SELECT FROM admitted AS a WHERE a.queue = k.queue AND a.job_type = k.job_type
            )
            ORDER BY k.ord
        )
        INTO v_known
        FROM ROWS FROM (
            pg_catalog.unnest(v_pairs), pg_catalog.unnest(v_types), pg_catalog.unnest(v_known)
        ) WITH ORDINALITY AS k (queue, job_type, known, ord);
    END IF;

    RETURN QUERY
    SELECT
        k.queue, k.job_type,
        CASE WHEN k.known THEN k.queue ELSE '' END,
        CASE WHEN k.known THEN k.job_type ELSE '' END
    FROM ROWS FROM (
        pg_catalog.unnest(v_pairs), pg_catalog.unnest(v_types), pg_catalog.unnest(v_known)
    ) AS k (queue, job_type, known);
END;
$$;

COMMENT ON FUNCTION jobq__metric_labels(text[], text[]) IS
'Private. For each distinct (queues[i], job_types[i]): the label set jobq_metrics() counts it
under, its own when admitted to jobq_metric_labels (admitting it while fewer than
jobq_settings.metrics_label_sets pairs are), else the overflow label set ('''', '''').';

REVOKE EXECUTE ON FUNCTION jobq__metric_labels(text[], text[]) FROM PUBLIC;
