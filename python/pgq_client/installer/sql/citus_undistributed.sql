-- The signatures of a function of the schema that Citus does not colocate yet.
SELECT p.oid::pg_catalog.regprocedure::text
FROM pg_catalog.pg_proc AS p
WHERE
    p.pronamespace = pg_catalog.to_regnamespace({schema_ident}::text)
    AND p.proname = {name}::text
    AND NOT EXISTS (
        SELECT FROM pg_catalog.pg_dist_object AS o
        WHERE
            o.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
            AND o.objid = p.oid
            AND o.colocationid IS NOT NULL
    )
