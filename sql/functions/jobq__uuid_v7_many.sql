-- jobq__uuid_v7_many: the ids of one batch of new jobs, as UUID version 7 values that increase
-- in input order.
--
-- jobq__uuid_v7 per row draws a random UUID, reads the clock and rebuilds the bytes, a large
-- part of a batch insert's time. A batch needs one draw and one clock reading: the first 64
-- bits (48 bits of Unix milliseconds, the version, 12 random bits) are shared, and the last
-- 64 bits (the variant, then a random start of 56 bits with room above it) count up, one per
-- job. The ids stay version 7 (time-ordered
-- across batches, so the primary key grows at its right edge), follow each other
-- in input order within a batch (claims of equal priority and available_at take them in that
-- order), and are unique unless two batches in the same millisecond draw the same 68 random
-- bits, near enough to overlap: the primary key would then refuse the second (never a silent
-- duplicate).
--
-- PL/pgSQL, so that the shared half is computed once into variables and each id is one
-- expression over a plain scan of generate_series, about half the time of one SQL statement
-- (the shared half in a subquery joined to the series, an ordered array_agg); figures in
-- docs/decisions/0004-one-producer-path.md.

CREATE OR REPLACE FUNCTION jobq__uuid_v7_many(count integer) RETURNS uuid[]
LANGUAGE plpgsql
VOLATILE
PARALLEL SAFE
AS $$
DECLARE
    v_bytes CONSTANT bytea := pg_catalog.uuid_send(pg_catalog.gen_random_uuid());
    v_hi text;
    v_lo bigint;
BEGIN
    IF count IS NULL OR count < 1 THEN
        RETURN NULL;
    END IF;
    -- 48 bits of Unix milliseconds, the version (7), 12 random bits: 16 hexadecimal digits.
    v_hi := pg_catalog.lpad(
        pg_catalog.to_hex(
            pg_catalog.floor(
                pg_catalog.date_part('epoch', pg_catalog.clock_timestamp())
                * 1000::double precision
            )::bigint
        ),
        12, '0'
    ) || '7' || pg_catalog.substr(pg_catalog.encode(v_bytes, 'hex'), 1, 3);
    -- 1 and 0 (the variant), five zero bits (room to count), 56 random bits: negative as a
    -- bigint, which to_hex writes as its 16 hexadecimal digits. (Operators other than
    -- arithmetic ones share one precedence: each shift is in parentheses.)
    v_lo := (-9223372036854775807 - 1)
        | (pg_catalog.get_byte(v_bytes, 9)::bigint << 48)
        | (pg_catalog.get_byte(v_bytes, 10)::bigint << 40)
        | (pg_catalog.get_byte(v_bytes, 11)::bigint << 32)
        | (pg_catalog.get_byte(v_bytes, 12)::bigint << 24)
        | (pg_catalog.get_byte(v_bytes, 13)::bigint << 16)
        | (pg_catalog.get_byte(v_bytes, 14)::bigint << 8)
        | pg_catalog.get_byte(v_bytes, 15)::bigint;
    RETURN ARRAY(
        SELECT (v_hi || pg_catalog.to_hex(v_lo + g.n))::uuid
        FROM pg_catalog.generate_series(1, count) AS g (n)
        ORDER BY g.n
    );
END;
$$;

COMMENT ON FUNCTION jobq__uuid_v7_many(integer) IS
'Private. count new UUID version 7 values for one batch, increasing in array order: one
timestamp and random start for the batch, then consecutive values. NULL for count < 1.';

REVOKE EXECUTE ON FUNCTION jobq__uuid_v7_many(integer) FROM PUBLIC;
