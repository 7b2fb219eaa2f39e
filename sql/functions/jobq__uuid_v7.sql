-- jobq__uuid_v7 (private): a new job id, UUID version 7 (RFC 9562): 48 bits of Unix time in
-- milliseconds, the version, then random bits; PostgreSQL 13 has no uuidv7(). The random
-- bits and the variant come from gen_random_uuid(); the first six bytes are replaced by the
-- time and the version nibble 4 becomes 7 (bits 52 and 53 set).
--
-- Why: ids made at about the same time sort together, so a new job's primary-key entry lands
-- on the same few leaf pages as the other recent ones instead of on a random page of the whole
-- index, which writes less WAL per enqueued job (docs/decisions/0004-one-producer-path.md).
-- Callers rely on no property of the ids.
--
-- jobq_jobs.id has the same expression as its default; the batch enqueues draw theirs with
-- jobq__uuid_v7_many. A single-expression LANGUAGE sql function
-- without SET clauses, so that the planner inlines it, and its calls are qualified for that
-- reason (it is then parsed with its caller's search_path).

CREATE OR REPLACE FUNCTION jobq__uuid_v7() RETURNS uuid
LANGUAGE sql
VOLATILE
PARALLEL SAFE
AS $$
    SELECT pg_catalog.encode(
        pg_catalog.set_bit(
            pg_catalog.set_bit(
                pg_catalog.overlay(
                    pg_catalog.uuid_send(pg_catalog.gen_random_uuid()),
                    pg_catalog.substr(
                        pg_catalog.int8send(
                            pg_catalog.floor(
                                pg_catalog.date_part('epoch', pg_catalog.clock_timestamp())
                                * 1000::double precision
                            )::bigint
                        ),
                        3
                    ),
                    1,
                    6
                ),
                52,
                1
            ),
            53,
            1
        ),
        'hex'
    )::uuid
$$;

COMMENT ON FUNCTION jobq__uuid_v7() IS
'Private. A new UUID version 7: Unix time in milliseconds (48 bits), version 7, random bits.';

REVOKE EXECUTE ON FUNCTION jobq__uuid_v7() FROM PUBLIC;
