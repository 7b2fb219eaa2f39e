-- Before a file with `--! granted-as:`: whether its function is new in this schema.
SELECT pg_catalog.set_config(
    {setting},
    (
        pg_catalog.to_regproc(
            pg_catalog.format('%I.%I', pg_catalog.current_schema(), {name})
        ) IS NULL
    )::pg_catalog.text,
    TRUE
);
