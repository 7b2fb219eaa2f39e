-- jobq__blank (private): whether a text is NULL or blank. The one definition of blank for every
-- argument that may not be (job_type, queue, idempotency_key, worker_id): made only of
-- characters that show nothing, that is Unicode white space (the White_Space property:
-- U+0009-U+000D, U+0020, U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F,
-- U+3000) and the invisible format and filler characters (U+00AD soft hyphen, U+115F, U+1160,
-- U+3164 and U+FFA0 Hangul fillers, U+180E, U+200B-U+200F zero-width space, joiners and
-- direction marks, U+202A-U+202E direction embeddings, U+2060-U+2064 word joiner and invisible
-- operators, U+FEFF zero-width no-break space).
--
-- Written as a class of code points rather than \s, whose meaning follows the database's
-- locale (in the C locale \s is ASCII white space only). A single-expression LANGUAGE sql
-- function without SET clauses, so that the planner inlines it into its callers (it is then
-- parsed with their search_path, so its operator is one that pg_catalog has exactly:
-- text !~ text); IMMUTABLE and reads no table.

CREATE OR REPLACE FUNCTION jobq__blank(value text) RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT value IS NULL OR value !~ (
        '[^\u0009-\u000d\u0020\u0085\u00a0\u00ad\u115f\u1160\u1680\u180e\u2000-\u200f'
        '\u2028-\u202f\u205f-\u2064\u3000\u3164\ufeff\uffa0]'
    )
$$;

COMMENT ON FUNCTION jobq__blank(text) IS
'Private. True when value is NULL or made only of Unicode white space and invisible characters
(zero-width spaces and joiners, direction marks, U+FEFF, Hangul fillers).';

REVOKE EXECUTE ON FUNCTION jobq__blank(text) FROM PUBLIC;
