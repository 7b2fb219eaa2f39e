-- Every object a step creates lands in the schema, and every function captures it.
SET LOCAL search_path = {schema}, pg_temp;
