"""jobq_schedule takes a time zone exactly when pg_timezone_names lists its name, and leaves the
caller's TimeZone setting as it was.

The function looks most names up through the TimeZone setting, which reads one zone file where
pg_timezone_names reads them all: these tests hold the two to the same answer for the names that
could tell them apart (another case, an abbreviation, a POSIX string, a leap-second zone, a
directory, a path, a number) and, in `make test`, for every listed name and its case variants.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

Conn = psycopg.Connection[Any]

# Whether jobq_schedule takes the zone; any refusal but the zone's own 22023 is an error.
_ACCEPTS = """
CREATE FUNCTION pg_temp.accepts(zone text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM jobq_schedule('zone check', '0 0 * * *', 't', timezone => zone);
    RETURN TRUE;
EXCEPTION WHEN invalid_parameter_value THEN
    IF SQLERRM = format('jobq_schedule: timezone %s is not a known IANA time zone',
                        quote_literal(zone)) THEN
        RETURN FALSE;
    END IF;
    RAISE;
END
$$
"""

# Each name with jobq_schedule's verdict and whether pg_timezone_names lists it.
_VERDICTS = """
SELECT zone, pg_temp.accepts(zone),
       EXISTS (SELECT FROM pg_timezone_names AS z WHERE z.name = zone)
FROM unnest(%s::text[]) AS zone
"""

# Names on either side of every rule the lookup follows.
TRICKY = [
    "UTC", "utc", "Etc/UTC", "GMT", "gmt", "Z", "Europe/London", "europe/london",
    "EUROPE/LONDON", "America/New_York", "Asia/Kathmandu", "CET", "cet", "CEST", "EST", "PST",
    "EST5EDT", "est5edt", "Etc/GMT+3", "ETC/GMT+3", "GMT+0", "GMT0", "UTC+3", "utc+3", "UTC-0",
    "EST5", "<+03>-03", "EST5EDT,M3.2.0,M11.1.0", "3", "-8", "INTERVAL '-08:00' HOUR TO MINUTE",
    "right/UTC", "right/Europe/London", "posix/Europe/London", "posixrules", "localtime",
    "Factory", "Europe", "Europe/", "zone.tab", "tzdata.zi", "leapseconds",
    "Europe/../Europe/London", "/usr/share/zoneinfo/UTC", ":UTC", "", " UTC", "UTC ",
    "Mars/Olympus",
]


def _mismatches(conn: Conn, names: list[str]) -> tuple[list[tuple[str, bool, bool]], set[str]]:
    """The names where jobq_schedule and pg_timezone_names disagree, and those it took."""
    conn.execute(_ACCEPTS)
    rows = conn.execute(_VERDICTS, (names,)).fetchall()
    assert len(rows) == len(names)
    return [r for r in rows if r[1] != r[2]], {r[0] for r in rows if r[1]}


def test_a_zone_is_taken_exactly_when_pg_timezone_names_lists_it(conn: Conn) -> None:
    wrong, taken = _mismatches(conn, TRICKY)
    assert wrong == []
    assert {"UTC", "Europe/London", "Etc/GMT+3", "EST5EDT", "GMT+0"} <= taken
    assert not {"utc", "europe/london", "CEST", "UTC+3", "EST5", "3", "", "Mars/Olympus"} & taken


@pytest.mark.slow
def test_every_listed_zone_and_its_case_variants_and_abbreviations(conn: Conn) -> None:
    names = [
        name
        for (zone,) in conn.execute("SELECT name FROM pg_timezone_names").fetchall()
        for name in {zone, zone.lower(), zone.upper()}
    ]
    names += [a for (a,) in conn.execute("SELECT abbrev FROM pg_timezone_abbrevs").fetchall()]
    wrong, taken = _mismatches(conn, names)
    assert wrong == []
    listed = conn.execute("SELECT count(*) FROM pg_timezone_names").fetchone()
    assert listed == (len(taken),)


def test_the_callers_time_zone_is_the_same_after_a_schedule_is_taken_or_refused(
    conn: Conn,
) -> None:
    conn.execute("SET TIME ZONE 'Asia/Kathmandu'")
    conn.execute("SELECT jobq_schedule('a', '0 0 * * *', 't', timezone => 'America/New_York')")
    assert conn.execute("SHOW timezone").fetchone() == ("Asia/Kathmandu",)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="timezone 'UTC\\+3'"):
        conn.execute("SELECT jobq_schedule('b', '0 0 * * *', 't', timezone => 'UTC+3')")
    assert conn.execute("SHOW timezone").fetchone() == ("Asia/Kathmandu",)
    with conn.transaction():
        conn.execute("SET LOCAL TIME ZONE 'Pacific/Chatham'")
        conn.execute("SELECT jobq_schedule('c', '0 0 * * *', 't', timezone => 'Europe/London')")
        assert conn.execute("SHOW timezone").fetchone() == ("Pacific/Chatham",)
    assert conn.execute("SHOW timezone").fetchone() == ("Asia/Kathmandu",)
    names = conn.execute("SELECT name FROM jobq_schedules ORDER BY name").fetchall()
    assert names == [("a",), ("c",)]  # the refused one changed nothing
