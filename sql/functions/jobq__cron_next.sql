-- jobq__cron_next (private): the first fire time strictly after an instant, for a cron
-- expression parsed by jobq__cron_parse, read as wall-clock times in an IANA time zone.
--
-- The walk is on wall-clock time (timestamp without time zone) and jumps field by field: a
-- month that does not match skips to the next month, a day to the next day, an hour to the
-- next matching hour, so a fire is found in a few dozen steps whatever the expression. It
-- gives up after ten years of wall-clock time and returns NULL (an expression such as
-- `0 0 30 2 *` never fires; jobq_schedule refuses those).
--
-- Daylight-saving rules, applied when a wall-clock time becomes an instant:
--   * a time skipped by a change (02:30 on a spring-forward night) fires at the end of the
--     gap, the first instant whose wall-clock time is past it (03:00 of the new offset); two
--     skipped times (02:00 and 02:30) are the same instant and fire once;
--   * a repeated time (01:30 on a fall-back night) fires once, at its first occurrence:
--     PostgreSQL reads an ambiguous local time as the later one, so the earlier one is
--     looked for explicitly, and a wall-clock time whose first occurrence is not after
--     `after` is passed over (the walk never goes back in wall-clock time).

CREATE OR REPLACE FUNCTION jobq__cron_next(
    masks bigint[],
    timezone text,
    after timestamptz
) RETURNS timestamptz
LANGUAGE plpgsql
STABLE
PARALLEL SAFE
SET search_path FROM CURRENT
AS $$
DECLARE
    v_local timestamp;
    v_limit timestamp;
    v_hour integer;
    v_minute integer;
    v_dom_ok boolean;
    v_dow_ok boolean;
    v_next integer;
    v_at timestamptz;
    v_earlier timestamptz;
    v_lo bigint;
    v_hi bigint;
    v_mid bigint;
BEGIN
    v_local := pg_catalog.date_trunc('minute', after AT TIME ZONE jobq__cron_next.timezone)
        + interval '1 minute';
    v_limit := v_local + interval '10 years';
    LOOP
        IF v_local > v_limit THEN
            RETURN NULL;
        END IF;
        IF masks[4] & (1::bigint << EXTRACT(MONTH FROM v_local)::integer) = 0 THEN
            v_local := pg_catalog.date_trunc('month', v_local) + interval '1 month';
            CONTINUE;
        END IF;
        v_dom_ok := masks[3] & (1::bigint << EXTRACT(DAY FROM v_local)::integer) <> 0;
        v_dow_ok := masks[5] & (1::bigint << EXTRACT(DOW FROM v_local)::integer) <> 0;
        -- Vixie cron: a day field starting with * makes both required, else either suffices.
        v_dom_ok := CASE WHEN masks[6] = 1 OR masks[7] = 1 THEN v_dom_ok AND v_dow_ok
                         ELSE v_dom_ok OR v_dow_ok END;
        IF NOT v_dom_ok THEN
            v_local := pg_catalog.date_trunc('day', v_local) + interval '1 day';
            CONTINUE;
        END IF;
        v_hour := EXTRACT(HOUR FROM v_local)::integer;
        v_next := NULL;
        FOR v_h IN v_hour..23 LOOP
            IF masks[2] & (1::bigint << v_h) <> 0 THEN
                v_next := v_h;
                EXIT;
            END IF;
        END LOOP;
        IF v_next IS NULL THEN
            v_local := pg_catalog.date_trunc('day', v_local) + interval '1 day';
            CONTINUE;
        END IF;
        IF v_next > v_hour THEN
            v_local := pg_catalog.date_trunc('day', v_local)
                + interval '1 hour' * v_next::double precision;
        END IF;
        v_minute := EXTRACT(MINUTE FROM v_local)::integer;
        v_next := NULL;
        FOR v_m IN v_minute..59 LOOP
            IF masks[1] & (1::bigint << v_m) <> 0 THEN
                v_next := v_m;
                EXIT;
            END IF;
        END LOOP;
        IF v_next IS NULL THEN
            v_local := pg_catalog.date_trunc('hour', v_local) + interval '1 hour';
            CONTINUE;
        END IF;
        v_local := pg_catalog.date_trunc('hour', v_local)
            + interval '1 minute' * v_next::double precision;

        -- v_local matches: the instant at which that wall-clock time first comes.
        v_at := v_local AT TIME ZONE jobq__cron_next.timezone;
        IF (v_at AT TIME ZONE jobq__cron_next.timezone) = v_local THEN
            -- A repeated time: the same wall-clock time under the offset of a day earlier.
            v_earlier := (v_local - ((v_at - interval '1 day') AT TIME ZONE jobq__cron_next.timezone
                                     - (v_at - interval '1 day') AT TIME ZONE 'UTC'))
                         AT TIME ZONE 'UTC';
            IF v_earlier < v_at
               AND (v_earlier AT TIME ZONE jobq__cron_next.timezone) = v_local THEN
                v_at := v_earlier;
            END IF;
        ELSE
            -- A skipped time: the first instant whose wall-clock time is past it, found by
            -- halving (to the second) a day-long interval around the gap.
            v_lo := EXTRACT(EPOCH FROM v_at - interval '1 day')::bigint;
            v_hi := EXTRACT(EPOCH FROM v_at + interval '1 day')::bigint;
            WHILE v_hi - v_lo > 1 LOOP
                v_mid := (v_lo + v_hi) / 2;
                IF (pg_catalog.to_timestamp(v_mid::double precision)
                    AT TIME ZONE jobq__cron_next.timezone) > v_local THEN
                    v_hi := v_mid;
                ELSE
                    v_lo := v_mid;
                END IF;
            END LOOP;
            v_at := pg_catalog.to_timestamp(v_hi::double precision);
        END IF;
        IF v_at > after THEN
            RETURN v_at;
        END IF;
        v_local := v_local + interval '1 minute';
    END LOOP;
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION jobq__cron_next(bigint[], text, timestamptz) IS
'Private. The first fire time strictly after `after` of the cron masks (jobq__cron_parse) in
wall-clock time of `timezone`; a time skipped by daylight saving fires at the end of the gap, a
repeated one once (its first occurrence). NULL when nothing fires within ten years.';

REVOKE EXECUTE ON FUNCTION jobq__cron_next(bigint[], text, timestamptz) FROM PUBLIC;
