"""What the dashboard shows of a job's error: the exception line in lists and first on the job
page, the traceback folded under it."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient
from webtools import dead_letter

from jobq_web import create_app

# A traceback stored whole (an older Worker, or SQL's jobq_fail called by hand), and the text a
# Worker stores now: the exception first, then the last frames.
WHOLE = (
    "Traceback (most recent call last):\n"
    '  File "/srv/app/handlers.py", line 12, in send_email\n'
    "    smtp.send(message)\n"
    "ConnectionRefusedError: smtp.example.com:25 refused the connection"
)
HEADED = (
    "ValueError: no such customer: 42\n"
    "Traceback (last 1 of 1 frames, most recent call last):\n"
    "  handlers.py:30 in send_email"
)


@pytest.fixture
def client(dsn: str) -> Iterator[TestClient]:
    with TestClient(create_app(dsn), base_url="http://127.0.0.1") as c:
        yield c


def test_lists_show_the_exception_line_not_the_traceback_header(
    dsn: str, client: TestClient
) -> None:
    """The dead letters' and the jobs' lists show each job's exception line, whichever way its
    error was stored, never "Traceback (most recent call last)"."""
    whole = dead_letter(dsn, job_type="whole", errors=("first", WHOLE))
    headed = dead_letter(dsn, job_type="headed", errors=(HEADED,))
    for path in ("/dead-letters", "/jobs?status=dead_letter"):
        page = client.get(path)
        assert page.status_code == 200
        rows = dict(re.findall(r'<tr data-id="([0-9a-f-]+)">.*?<td class="error">(.*?)</td>',
                               page.text, re.S))
        assert html.unescape(rows[str(whole)]) == WHOLE.splitlines()[-1], path
        assert html.unescape(rows[str(headed)]) == HEADED.splitlines()[0], path
        assert "Traceback" not in page.text


def test_the_job_page_shows_the_exception_line_with_the_traceback_folded(
    dsn: str, client: TestClient
) -> None:
    """The job page's last error and each attempt of its history start with the exception line;
    the whole text is folded under it (a <details>), and the timeline names the exception."""
    job_id = dead_letter(dsn, errors=("disk full", WHOLE))
    page = client.get(f"/jobs/{job_id}").text
    last = re.search(r"<th>last error</th><td class=\"error\">(.*?)</td>", page, re.S)
    assert last
    line = re.search(r'<pre class="error-line">(.*?)</pre>', last.group(1), re.S)
    folded = re.search(r'<details class="traceback"><summary>traceback</summary><pre>(.*?)</pre>',
                       last.group(1), re.S)
    assert line and html.unescape(line.group(1)) == WHOLE.splitlines()[-1]
    assert folded and html.unescape(folded.group(1)) == WHOLE
    history = re.search(r'<table id="errors">(.*?)</table>', page, re.S)
    assert history
    lines = re.findall(r'<pre class="error-line">(.*?)</pre>', history.group(1))
    assert [html.unescape(x) for x in lines] == ["disk full", WHOLE.splitlines()[-1]]
    # a one-line error has nothing to fold
    assert history.group(1).count('<details class="traceback">') == 1
    timeline = re.search(r'<ol class="timeline" id="timeline">(.*?)</ol>', page, re.S)
    assert timeline and "Traceback" not in timeline.group(1)
    assert html.unescape(WHOLE.splitlines()[-1]) in html.unescape(timeline.group(1))
