"""The least a Django project needs to run the Django recipe (examples/django_enqueue.py):
one database, Django's PostgreSQL backend (psycopg 3 when it is installed), no apps.

The database is ``JOBQ_DSN`` (a libpq DSN or URI), the one jobq is installed in.
"""

from __future__ import annotations

import os

from psycopg.conninfo import conninfo_to_dict

_db = conninfo_to_dict(os.environ.get("JOBQ_DSN", "dbname=app"))

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _db.get("dbname", ""),
        "USER": _db.get("user", ""),
        "PASSWORD": _db.get("password", ""),
        "HOST": _db.get("host", ""),
        "PORT": _db.get("port", ""),
    }
}
INSTALLED_APPS: list[str] = []
USE_TZ = True
SECRET_KEY = "jobq-example-only"  # an example's settings: no secret here
