"""How a person writes a duration (``90s``, ``30m``, ``1h30m``): the one parser of the ``jobq``
command's duration options and of the dashboard's "older than" filters, which are two
distributions built on this one."""

from __future__ import annotations

import math
import re
from datetime import timedelta

__all__ = ["parse_duration"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])", re.IGNORECASE)
_DURATION = re.compile(rf"(?:{_DURATION_PART.pattern})+\s*", re.IGNORECASE)


def parse_duration(text: str) -> timedelta:
    """``90``, ``90s``, ``30m``, ``12h``, ``7d``, ``1w``, or a sum such as ``1h30m``; a
    ValueError that quotes ``text`` for anything else."""
    value = text.strip()
    try:
        seconds = float(value)
    except ValueError:
        if not _DURATION.fullmatch(value):
            example = "e.g. 90, 90s, 30m, 12h, 7d, 1w, 1h30m"
            raise ValueError(f"{text!r} is not a duration ({example})") from None
        seconds = sum(float(n) * _UNITS[u.lower()] for n, u in _DURATION_PART.findall(value))
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{text!r} is not a duration: it must be a finite, non-negative time")
    try:
        return timedelta(seconds=seconds)
    except OverflowError:
        raise ValueError(f"{text!r} is too long a duration") from None
