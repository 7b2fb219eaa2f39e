"""jobq benchmarks: every scenario measured side by side with a raw-SQL ceiling in one run.

Run with ``make bench`` (several minutes) or ``make bench-quick`` (about a minute); see
docs/performance.md. Never part of CI.
"""
