"""The error text a Worker stores for a failed attempt (``last_error`` and the job's ``errors``).

Producers and monitors read it (``jobq_job_status``, ``Queue.result``'s ``JobFailed``, the
dashboard, ``jobq jobs``), so it says what failed first and keeps little of where: the
exception's type and message on the first line, then the last :data:`MAX_FRAMES` frames of its
traceback, each as file name (no directory), line and function, never a source line; at most
:data:`MAX_CHARS` characters in all. The whole traceback goes to the Worker's log, at DEBUG
(logger ``pgq_client.worker``).
"""

from __future__ import annotations

import os
import traceback

MAX_FRAMES = 5
MAX_CHARS = 2000
_MAX_HEAD = 1000  # the exception's line, so that frames always fit after it


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _head(exc: BaseException) -> str:
    kind = type(exc)
    name = kind.__qualname__
    if kind.__module__ not in ("builtins", "__main__"):
        name = f"{kind.__module__}.{name}"
    try:
        message = str(exc)
    except Exception:  # a broken __str__ must not lose the failure
        message = "<message unavailable: str() raised>"
    # one line: a multi-line message would hide the frames' header among its own lines
    message = " ".join(message.split("\n")).strip()
    return _cut(f"{name}: {message}" if message else name, _MAX_HEAD)


def error_text(exc: BaseException) -> str:
    """``Type: message``, then the traceback's last frames, cut to :data:`MAX_CHARS`."""
    lines = [_head(exc)]
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        kept = frames[-MAX_FRAMES:]
        lines.append(
            f"Traceback (last {len(kept)} of {len(frames)} frames, most recent call last):"
        )
        lines += [
            _cut(f"  {os.path.basename(f.filename)}:{f.lineno} in {f.name}", 200) for f in kept
        ]
    return _cut("\n".join(lines), MAX_CHARS)
