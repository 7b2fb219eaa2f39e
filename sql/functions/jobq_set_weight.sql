-- jobq_set_weight (admin): the weight of one key of a limit group whose share is weighted: the
-- key's starts, while it has work, are its weight over the weights of the keys with work. The
-- weight lives in the key's row of jobq_limit_keys, the row the claim reads and writes under
-- the key's lock, so the claim reads it with the pass at no extra probe. A weight may be set
-- before the group shares or has jobs; removing the group's limit (jobq_set_limit) deletes it.
--! levels: admin

CREATE OR REPLACE FUNCTION jobq_set_weight(
    limit_group text,
    limit_key text,
    weight real DEFAULT 1
) RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_error text;
BEGIN
    IF jobq_set_weight.limit_group IS NULL THEN
        v_error := 'limit_group must be a non-blank string';
    ELSE
        v_error := jobq__limit_argument_problem(jobq_set_weight.limit_group,
                                                jobq_set_weight.limit_key);
    END IF;
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION 'jobq_set_weight: %', v_error USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- PostgreSQL sorts NaN above Infinity: the upper bound rejects both.
    IF jobq_set_weight.weight IS NULL
       OR NOT (jobq_set_weight.weight > 0::real AND jobq_set_weight.weight < 'Infinity'::real) THEN
        RAISE EXCEPTION 'jobq_set_weight: weight must be a positive finite number, got %',
            coalesce(jobq_set_weight.weight::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    INSERT INTO jobq_limit_keys AS k (limit_group, limit_key, weight)
    VALUES (
        jobq_set_weight.limit_group, coalesce(jobq_set_weight.limit_key, ''),
        jobq_set_weight.weight
    )
    ON CONFLICT ON CONSTRAINT jobq_limit_keys_pkey DO UPDATE
    SET weight = excluded.weight;
END;
$$;

COMMENT ON FUNCTION jobq_set_weight(text, text, real) IS
'Admin only. Sets the weight of one key of a limit group: under share weighted, the keys with
work get starts in proportion to their weights (a key without one weighs 1). Applies to claims
that start after it commits; removing the group''s limit (jobq_set_limit) removes its weights.
Arguments: limit_group (1-200 chars, not blank), limit_key (NULL: the group''s jobs without a
key; else 1-200 chars, not blank), weight (positive and finite; default 1).
Result: none.
Errors: 22023 limit_group NULL, blank or longer than 200 characters, limit_key blank or longer
than 200 characters, weight NULL, not positive, infinite or NaN.
Concurrency: writes the key''s row, which a claim of the key also writes: it waits for a claim
of the key under way to commit.';

REVOKE EXECUTE ON FUNCTION jobq_set_weight(text, text, real) FROM PUBLIC;
