-- 0011_jobq_dashboard.sql — the row type of the dashboard's job listing.
--
-- jobq_jobs_page() lists jobs one page at a time for `jobq web` and other dashboards, without
-- payloads (the monitor level may call it; payloads stay with admins, jobq_get_job). A
-- function whose arguments (status, queue, job_type) are also the names of its result's
-- columns cannot declare them with RETURNS TABLE, hence this composite type. No index is
-- added: each status is listed through the partial index that already holds it.

CREATE TYPE jobq_job_summary AS (
    id uuid,
    queue text,
    job_type text,
    status text,
    priority integer,
    attempts integer,
    max_attempts integer,
    available_at timestamptz,
    created_at timestamptz,
    updated_at timestamptz,
    locked_at timestamptz,
    locked_by text,
    finished_at timestamptz,
    last_error text,
    cancel_requested boolean,
    sort_at timestamptz,
    matches boolean
);

COMMENT ON TYPE jobq_job_summary IS
'jobq: one job as jobq_jobs_page() lists it: the columns of jobq_jobs of the same names
(no payload, no result, no errors history; cancel_requested is cancel_requested_at IS NOT NULL)
and sort_at, the time the listing of its status is ordered by (available_at for pending jobs,
locked_at for processing ones, finished_at for finished ones), which with id is the cursor of
the next page; matches, false only on the row that marks where a filtered search of finished
jobs stopped (the last job it examined: not one of the jobs listed, the cursor to search on).';

-- Types are usable by everyone by default; the function that returns this one is not.
