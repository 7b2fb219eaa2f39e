-- jobq__error_line (private): the line of a job's error that says what failed, as the client's
-- error_summary() picks it: the first non-blank line (a Worker stores the exception first, then
-- the traceback's last frames), or, when that line opens a whole Python traceback ("Traceback
-- (most recent call last):", after an optional "worker error: "), the last one. Grouping
-- errors by it makes one row of each exception instead of one of every traceback's first line.
-- A single-expression LANGUAGE sql function without SET clauses, so that the planner inlines
-- it; every call in it is pg_catalog's.

CREATE OR REPLACE FUNCTION jobq__error_line(error text) RETURNS text
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN s.lines[1] IS NULL THEN ''
        WHEN pg_catalog.regexp_replace(s.lines[1], '^worker error: ', '') LIKE 'Traceback%'
             AND pg_catalog.cardinality(s.lines) > 1
            THEN pg_catalog.substr(s.lines[1], 1, pg_catalog.strpos(s.lines[1], 'Traceback') - 1)
                 || s.lines[pg_catalog.cardinality(s.lines)]
        ELSE s.lines[1]
    END
    FROM (
        SELECT ARRAY(
            SELECT pg_catalog.btrim(l.line, E' \t\r\f\v')
            FROM pg_catalog.regexp_split_to_table(error, E'\n') WITH ORDINALITY AS l (line, n)
            WHERE pg_catalog.btrim(l.line, E' \t\r\f\v') <> ''
            ORDER BY l.n
        ) AS lines
    ) AS s
$$;

COMMENT ON FUNCTION jobq__error_line(text) IS
'Private. The exception line of a job''s error: its first non-blank line, or the last one when
the first opens a Python traceback; '''' for NULL or a blank error.';

REVOKE EXECUTE ON FUNCTION jobq__error_line(text) FROM PUBLIC;
