-- jobq__cron_fires (private): the last `max_fires` fire times in [first, until], oldest first,
-- for a tick that finds a schedule due (`first` is its next_run_at, itself a fire time).
--
-- A schedule nobody ticked for a long time may have missed very many fires (a year of an
-- every-minute schedule is 525,600), and a tick only wants the most recent one or the most
-- recent 1,000. So the fires are listed in a window that ends at `until` and grows (an hour,
-- a day, a week, a month, a year, ten years) until it holds `max_fires` of them or reaches
-- back to `first`: the work is about the number of fires wanted, not the number missed.

CREATE OR REPLACE FUNCTION jobq__cron_fires(
    masks bigint[],
    timezone text,
    first timestamptz,
    until timestamptz,
    max_fires integer
) RETURNS timestamptz[]
LANGUAGE plpgsql
STABLE
PARALLEL SAFE
SET search_path FROM CURRENT
AS $$
DECLARE
    v_window interval;
    v_start timestamptz;
    v_fire timestamptz;
    v_fires timestamptz[];
    v_count integer;
BEGIN
    FOREACH v_window IN ARRAY ARRAY[
        interval '1 hour', interval '1 day', interval '7 days', interval '32 days',
        interval '366 days', interval '10 years'
    ] LOOP
        v_start := GREATEST(first, until - v_window);
        v_fires := '{}';
        v_fire := CASE
            WHEN v_start = first THEN first
            ELSE jobq__cron_next(
                masks, jobq__cron_fires.timezone, v_start - interval '1 microsecond'
            )
        END;
        WHILE v_fire IS NOT NULL AND v_fire <= until LOOP
            v_fires := pg_catalog.array_append(v_fires, v_fire);
            v_fire := jobq__cron_next(masks, jobq__cron_fires.timezone, v_fire);
        END LOOP;
        v_count := pg_catalog.cardinality(v_fires);
        IF v_count >= max_fires OR v_start = first THEN
            RETURN v_fires[GREATEST(v_count - max_fires + 1, 1):v_count];
        END IF;
    END LOOP;
    RETURN v_fires;
END;
$$;

COMMENT ON FUNCTION jobq__cron_fires(bigint[], text, timestamptz, timestamptz, integer) IS
'Private. The last max_fires fire times between first (a fire time) and until, both
included, oldest first; the cost grows with max_fires, not with the number of fires.';

REVOKE EXECUTE ON FUNCTION jobq__cron_fires(bigint[], text, timestamptz, timestamptz, integer)
FROM PUBLIC;
