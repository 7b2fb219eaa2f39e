-- What a test (tests/conftest.py) or a pgTAP file (scripts/pgtap-psql.sh) may have changed in
-- its database besides rows: every object made after initdb (by oid, so that a dropped and
-- re-made one differs too; built-in objects by their ACL alone), its owner, ACL, options and
-- settings, the source of every function, comments, and the database's own ACL and settings.
-- Temporary schemas are left out: they and their objects end with the sessions that made them,
-- which a recycle ends first.
SELECT pg_catalog.md5(pg_catalog.string_agg(x, ',' ORDER BY x)) FROM (
    SELECT pg_catalog.concat_ws('|', 'c', c.oid, c.relname, c.relowner, c.relkind, c.relacl,
                                c.reloptions, c.relpersistence, c.relrowsecurity)
    FROM pg_catalog.pg_class c
    WHERE (c.oid >= 16384 OR c.relacl IS NOT NULL)
      AND c.relnamespace NOT IN (SELECT oid FROM pg_catalog.pg_namespace
                                 WHERE nspname ~ '^pg_(toast_)?temp_')
    UNION ALL
    SELECT pg_catalog.concat_ws('|', 'a', a.attrelid, a.attnum, a.attname, a.atttypid,
                                a.attnotnull, a.attisdropped, a.atthasdef, a.attacl,
                                a.attoptions)
    FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
    WHERE a.attrelid >= 16384 AND c.relnamespace NOT IN (
        SELECT oid FROM pg_catalog.pg_namespace WHERE nspname ~ '^pg_(toast_)?temp_')
    UNION ALL
    SELECT pg_catalog.concat_ws('|', 'p', p.oid, p.proname, p.proowner, p.proacl, p.proconfig,
                                p.prosecdef, p.provolatile, pg_catalog.md5(p.prosrc))
    FROM pg_catalog.pg_proc p WHERE p.oid >= 16384 OR p.proacl IS NOT NULL
    UNION ALL
    SELECT pg_catalog.concat_ws('|', 'n', oid, nspname, nspowner, nspacl)
    FROM pg_catalog.pg_namespace WHERE nspname !~ '^pg_(toast_)?temp_'
    UNION ALL
    SELECT pg_catalog.concat_ws('|', 't', t.oid, t.typname, t.typowner, t.typacl)
    FROM pg_catalog.pg_type t
    WHERE (t.oid >= 16384 OR t.typacl IS NOT NULL)
      AND t.typnamespace NOT IN (SELECT oid FROM pg_catalog.pg_namespace
                                 WHERE nspname ~ '^pg_(toast_)?temp_')
    UNION ALL
    SELECT pg_catalog.concat_ws('|', 'd', classoid, objoid, objsubid,
                                pg_catalog.md5(description))
    FROM pg_catalog.pg_description WHERE objoid >= 16384
    UNION ALL SELECT pg_catalog.concat_ws('|', 'tg', oid, tgenabled) FROM pg_catalog.pg_trigger
    UNION ALL
    SELECT pg_catalog.concat_ws('|', 'k', oid) FROM pg_catalog.pg_constraint WHERE oid >= 16384
    UNION ALL
    SELECT pg_catalog.concat_ws('|', 'r', oid) FROM pg_catalog.pg_rewrite WHERE oid >= 16384
    UNION ALL
    SELECT pg_catalog.concat_ws('|', 'o', oid) FROM pg_catalog.pg_operator WHERE oid >= 16384
    UNION ALL SELECT pg_catalog.concat_ws('|', 'x', oid) FROM pg_catalog.pg_extension
    UNION ALL SELECT pg_catalog.concat_ws('|', 'ev', oid) FROM pg_catalog.pg_event_trigger
    UNION ALL SELECT pg_catalog.concat_ws('|', 'pol', oid) FROM pg_catalog.pg_policy
    UNION ALL SELECT pg_catalog.concat_ws('|', 'pub', oid) FROM pg_catalog.pg_publication
    UNION ALL
    SELECT pg_catalog.concat_ws('|', 'cast', oid) FROM pg_catalog.pg_cast WHERE oid >= 16384
    UNION ALL
    SELECT pg_catalog.concat_ws('|', 'conv', oid) FROM pg_catalog.pg_conversion WHERE oid >= 16384
    UNION ALL SELECT pg_catalog.concat_ws('|', 'lo', oid) FROM pg_catalog.pg_largeobject_metadata
    UNION ALL
    SELECT pg_catalog.concat_ws('|', 'dacl', oid, defaclrole, defaclacl)
    FROM pg_catalog.pg_default_acl
    UNION ALL
    SELECT pg_catalog.concat_ws('|', 'db', datacl, datallowconn, datconnlimit)
    FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database()
    UNION ALL
    SELECT pg_catalog.concat_ws('|', 'set', setrole, setconfig)
    FROM pg_catalog.pg_db_role_setting
    WHERE setdatabase = (SELECT oid FROM pg_catalog.pg_database
                         WHERE datname = pg_catalog.current_database())
) AS s (x)
