-- jobq__cron_parse (private): a cron expression as the bit masks that jobq__cron_next walks.
--
-- The result is bigint[7]: the minutes (bits 0-59), hours (0-23), days of the month (1-31),
-- months (1-12) and days of the week (0-6, Sunday 0; 7 is Sunday too) that match, then 1 or 0
-- for "the day-of-month field starts with *" and the same for day-of-week. Those two flags give
-- the classic (Vixie) cron rule for days: when both day fields are restricted, a day matches
-- if either does; when one starts with *, only the other one counts.
--
-- Accepted: five fields separated by white space, each a comma-separated list of `*`, `N`,
-- `N-M`, each optionally with a step `/S` (`N/S` means N to the field's maximum); month
-- names jan-dec and weekday names sun-sat (any case) wherever a number may stand; and the
-- shortcuts @hourly, @daily (@midnight), @weekly, @monthly, @yearly (@annually). Anything
-- else raises 22023 naming the field and the part that is wrong. The messages start with
-- "jobq_schedule:", the only public function that parses what a user gave.
--
-- Bit masks rather than arrays: the next-fire walk tests a bit with exact-type bigint
-- operators (no polymorphic array operator to qualify), and the result is one small value.

CREATE OR REPLACE FUNCTION jobq__cron_parse(cron text) RETURNS bigint[]
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path FROM CURRENT
AS $$
DECLARE
    v_names constant text[] := ARRAY['minute', 'hour', 'day-of-month', 'month', 'day-of-week'];
    v_min constant integer[] := ARRAY[0, 0, 1, 1, 0];
    v_max constant integer[] := ARRAY[59, 23, 31, 12, 7];
    v_expr text;
    v_fields text[];
    v_result bigint[] := ARRAY[0, 0, 0, 0, 0, 0, 0]::bigint[];
    v_item text;
    v_base text;
    v_step integer;
    v_lo integer;
    v_hi integer;
    v_bounds text[];
    v_value integer;
BEGIN
    IF cron IS NULL OR jobq__blank(cron) THEN
        RAISE EXCEPTION 'jobq_schedule: cron must be a non-blank cron expression'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Five fields (minute hour day-of-month month day-of-week) or @hourly, '
                         '@daily, @weekly, @monthly, @yearly.';
    END IF;
    v_expr := pg_catalog.lower(pg_catalog.btrim(cron, E' \t\r\n'));
    v_expr := CASE v_expr
        WHEN '@hourly' THEN '0 * * * *'
        WHEN '@daily' THEN '0 0 * * *'
        WHEN '@midnight' THEN '0 0 * * *'
        WHEN '@weekly' THEN '0 0 * * 0'
        WHEN '@monthly' THEN '0 0 1 * *'
        WHEN '@yearly' THEN '0 0 1 1 *'
        WHEN '@annually' THEN '0 0 1 1 *'
        ELSE v_expr
    END;
    IF pg_catalog.left(v_expr, 1) = '@' THEN
        RAISE EXCEPTION 'jobq_schedule: cron shortcut % is not supported',
            pg_catalog.quote_literal(v_expr)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Shortcuts: @hourly, @daily, @weekly, @monthly, @yearly.';
    END IF;
    v_fields := pg_catalog.regexp_split_to_array(v_expr, E'[ \t\r\n]+');
    IF pg_catalog.cardinality(v_fields) <> 5 THEN
        RAISE EXCEPTION 'jobq_schedule: cron must have 5 fields, got % in %',
            pg_catalog.cardinality(v_fields), pg_catalog.quote_literal(cron)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'minute hour day-of-month month day-of-week, e.g. ''30 2 * * *''.';
    END IF;

    FOR v_i IN 1..5 LOOP
        FOREACH v_item IN ARRAY pg_catalog.string_to_array(v_fields[v_i], ',') LOOP
            -- item = base [ / step ]
            v_step := 1;
            v_base := v_item;
            IF pg_catalog.strpos(v_item, '/') > 0 THEN
                v_base := pg_catalog.split_part(v_item, '/', 1);
                IF pg_catalog.split_part(v_item, '/', 2) !~ '^[0-9]{1,3}$'
                   OR pg_catalog.split_part(v_item, '/', 3) <> '' THEN
                    RAISE EXCEPTION 'jobq_schedule: cron % field has a bad step in %',
                        v_names[v_i], pg_catalog.quote_literal(v_item)
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
                v_step := pg_catalog.split_part(v_item, '/', 2)::integer;
                IF v_step < 1 THEN
                    RAISE EXCEPTION 'jobq_schedule: cron % field has a step of 0 in %',
                        v_names[v_i], pg_catalog.quote_literal(v_item)
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
            END IF;

            IF v_base = '*' THEN
                v_lo := v_min[v_i];
                v_hi := CASE WHEN v_i = 5 THEN 6 ELSE v_max[v_i] END;
            ELSE
                v_bounds := pg_catalog.string_to_array(v_base, '-');
                IF pg_catalog.cardinality(v_bounds) NOT IN (1, 2) THEN
                    RAISE EXCEPTION 'jobq_schedule: cron % field has a bad range %',
                        v_names[v_i], pg_catalog.quote_literal(v_item)
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
                FOR v_value IN 1..pg_catalog.cardinality(v_bounds) LOOP
                    -- a number, or a month / weekday name in its own field
                    IF v_bounds[v_value] ~ '^[0-9]{1,2}$' THEN
                        v_bounds[v_value] := v_bounds[v_value]::integer::text;
                    ELSIF v_i = 4 AND pg_catalog.array_position(
                        ARRAY['jan', 'feb', 'mar', 'apr', 'may', 'jun',
                              'jul', 'aug', 'sep', 'oct', 'nov', 'dec'], v_bounds[v_value]
                    ) IS NOT NULL THEN
                        v_bounds[v_value] := pg_catalog.array_position(
                            ARRAY['jan', 'feb', 'mar', 'apr', 'may', 'jun',
                                  'jul', 'aug', 'sep', 'oct', 'nov', 'dec'], v_bounds[v_value]
                        )::text;
                    ELSIF v_i = 5 AND pg_catalog.array_position(
                        ARRAY['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'], v_bounds[v_value]
                    ) IS NOT NULL THEN
                        v_bounds[v_value] := (pg_catalog.array_position(
                            ARRAY['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'],
                            v_bounds[v_value]
                        ) - 1)::text;
                    ELSE
                        RAISE EXCEPTION 'jobq_schedule: cron % field has % where a % is expected',
                            v_names[v_i], pg_catalog.quote_literal(v_item),
                            CASE v_i WHEN 4 THEN 'month (1-12 or jan-dec)'
                                     WHEN 5 THEN 'weekday (0-7 or sun-sat)'
                                     ELSE 'number' END
                            USING ERRCODE = 'invalid_parameter_value';
                    END IF;
                END LOOP;
                v_lo := v_bounds[1]::integer;
                v_hi := CASE
                    WHEN pg_catalog.cardinality(v_bounds) = 2 THEN v_bounds[2]::integer
                    WHEN v_step > 1 OR pg_catalog.strpos(v_item, '/') > 0 THEN v_max[v_i]
                    ELSE v_lo
                END;
                IF v_lo < v_min[v_i] OR v_hi > v_max[v_i] THEN
                    RAISE EXCEPTION 'jobq_schedule: cron % field % is out of range %-%',
                        v_names[v_i], pg_catalog.quote_literal(v_item), v_min[v_i], v_max[v_i]
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
                IF v_lo > v_hi THEN
                    RAISE EXCEPTION 'jobq_schedule: cron % field range % goes backwards',
                        v_names[v_i], pg_catalog.quote_literal(v_item)
                        USING ERRCODE = 'invalid_parameter_value';
                END IF;
            END IF;

            v_value := v_lo;
            WHILE v_value <= v_hi LOOP
                -- day-of-week 7 is Sunday, bit 0
                v_result[v_i] := v_result[v_i]
                    | (1::bigint << (CASE WHEN v_i = 5 AND v_value = 7 THEN 0 ELSE v_value END));
                v_value := v_value + v_step;
            END LOOP;
        END LOOP;
    END LOOP;

    v_result[6] := CASE WHEN pg_catalog.left(v_fields[3], 1) = '*' THEN 1 ELSE 0 END::bigint;
    v_result[7] := CASE WHEN pg_catalog.left(v_fields[5], 1) = '*' THEN 1 ELSE 0 END::bigint;
    RETURN v_result;
END;
$$;

COMMENT ON FUNCTION jobq__cron_parse(text) IS
'Private. Parses a five-field cron expression or @ shortcut into bit masks: bigint[7] of
minutes, hours, days of month, months, days of week (Sunday 0), then 1/0 for a day-of-month
and a day-of-week field starting with *. Errors: 22023 naming the field that is wrong.';

REVOKE EXECUTE ON FUNCTION jobq__cron_parse(text) FROM PUBLIC;
