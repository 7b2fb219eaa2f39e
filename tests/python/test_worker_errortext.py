"""The error text a Worker stores (pgq_client.worker.errortext) and the line shown of it."""

from __future__ import annotations

import os
import uuid

import pytest

from pgq_client.errors import JobFailed, error_summary
from pgq_client.worker.errortext import MAX_CHARS, MAX_FRAMES, error_text


class Boom(Exception):
    pass


def _raised(exc: BaseException, depth: int = 0) -> BaseException:
    def down(n: int) -> None:
        if n:
            down(n - 1)
        raise exc

    try:
        down(depth)
    except BaseException as caught:  # any exception is what is tested
        return caught
    raise AssertionError("not raised")


def test_the_exception_comes_first_with_its_module_for_non_builtins() -> None:
    assert error_text(_raised(ValueError("bad input"))).splitlines()[0] == "ValueError: bad input"
    first = error_text(_raised(Boom("x"))).splitlines()[0]
    assert first == f"{__name__}.Boom: x"
    assert error_text(_raised(ValueError())).splitlines()[0] == "ValueError"


def test_only_the_last_frames_without_directories_or_source_lines() -> None:
    text = error_text(_raised(ValueError("deep"), depth=20))
    lines = text.splitlines()
    assert lines[1] == f"Traceback (last {MAX_FRAMES} of 22 frames, most recent call last):"
    assert len(lines) == 2 + MAX_FRAMES
    assert all(
        line.startswith("  test_worker_errortext.py:") and line.endswith(" in down")
        for line in lines[2:]
    ), lines
    assert os.sep not in text and "raise exc" not in text


def test_an_exception_never_raised_has_no_frames() -> None:
    assert error_text(RuntimeError("not raised")) == "RuntimeError: not raised"


def test_a_long_or_multi_line_message_is_one_line_cut_and_the_frames_still_follow() -> None:
    text = error_text(_raised(ValueError("line 1\nline 2 " + "y" * 50_000), depth=3))
    lines = text.splitlines()
    assert lines[0].startswith("ValueError: line 1 line 2 yyy") and len(lines[0]) == 1000
    assert lines[1].startswith("Traceback (last 5 of 5 frames")
    assert len(text) <= MAX_CHARS


def test_a_message_that_cannot_be_printed_still_names_the_exception() -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert error_text(Unprintable()).endswith("Unprintable: <message unavailable: str() raised>")


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("ValueError: bad\nTraceback (last 1 of 1 frames, most recent call last):\n  h.py:1 in f",
         "ValueError: bad"),
        # an error stored whole by an older Worker: the exception is its last line
        ('Traceback (most recent call last):\n  File "/srv/app/h.py", line 3, in f\n'
         "    raise ValueError('bad')\nValueError: bad\n", "ValueError: bad"),
        ("worker error: Traceback (most recent call last):\n"
         '  File "/x.py", line 1\nOSError: gone', "worker error: OSError: gone"),
        ("stopped: a cancel was requested", "stopped: a cancel was requested"),
        ("", ""),
        (None, ""),
    ],
)
def test_the_line_shown_is_the_exception(stored: str | None, shown: str) -> None:
    assert error_summary(stored) == shown


def test_job_failed_names_the_exception() -> None:
    exc = JobFailed(uuid.UUID(int=1), "dead_letter", error_text(_raised(ValueError("bad"), 2)))
    assert str(exc).endswith("ended dead_letter: ValueError: bad")
