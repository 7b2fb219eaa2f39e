-- 0004_jobq_finished_indexes.sql — drops the two indexes of jobq_jobs that served finished
-- jobs only. Since 0002 finished jobs live in jobq_jobs_history (jobq_jobs holds pending and
-- processing jobs), so these partial indexes stay empty, yet every failure, cancel, release
-- or takeover that finishes a row still wrote an entry into one of them before the row moved
-- out. Every read of finished jobs (jobq_prune, jobq_jobs_page, jobq_queue_summary,
-- jobq_health, the listings) reads the history and its own indexes instead
-- (jobq_jobs_history_finished_idx, jobq_jobs_history_id_idx).

DROP INDEX jobq_jobs_succeeded_idx;
DROP INDEX jobq_jobs_failed_idx;
