-- The application table of the recipes in examples/: an order, whose confirmation e-mail is a
-- job enqueued in the same transaction (the job exists if and only if the order does).
CREATE TABLE IF NOT EXISTS orders (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    item text NOT NULL,
    email text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
