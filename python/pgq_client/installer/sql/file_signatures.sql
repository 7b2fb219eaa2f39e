-- The signature of each file's function as the schema would spell it (NULL: not installed).
SELECT
    f.name,
    pg_catalog.to_regprocedure(
        pg_catalog.concat(
            pg_catalog.quote_ident({schema_name}::pg_catalog.text), '.', s.signature
        )
    )::pg_catalog.text AS signature
FROM pg_catalog.unnest(ARRAY[{names}]::pg_catalog.text[]) WITH ORDINALITY AS f (name, i)
INNER JOIN pg_catalog.unnest(ARRAY[{signatures}]::pg_catalog.text[]) WITH ORDINALITY AS s (
    signature, i
) ON f.i OPERATOR (pg_catalog.=) s.i
