"""A connection kept between requests survives a database restart: checked before it is used."""

from __future__ import annotations

import psycopg
import pytest
from django.conf import settings
from django.db import close_old_connections, connection

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="ends a PostgreSQL session"),
]


def _end_session(pid: int) -> None:
    config = connection.settings_dict
    with psycopg.connect(
        dbname=config["NAME"], user=config["USER"], host=config["HOST"], port=config["PORT"] or 5432
    ) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


@pytest.fixture
def kept_connection():
    """The connection kept 600 s between requests, as in production (DB_CONN_MAX_AGE)."""
    saved = connection.settings_dict["CONN_MAX_AGE"]
    connection.close()
    connection.settings_dict["CONN_MAX_AGE"] = 600
    yield
    connection.close()
    connection.settings_dict["CONN_MAX_AGE"] = saved


def test_the_settings_check_a_kept_connection_before_using_it():
    assert settings.DATABASES["default"]["CONN_HEALTH_CHECKS"] is True


@pytest.mark.parametrize("checked", [True, False])
def test_the_request_after_the_database_ended_the_session_reconnects(kept_connection, checked):
    """What every request does first (Django's request_started handler), after the database
    ended the kept session: with the health check the next query reconnects; without it, it
    fails (the 500 every web worker answered once)."""
    connection.settings_dict["CONN_HEALTH_CHECKS"] = checked
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pid = cursor.fetchone()[0]
        _end_session(pid)
        close_old_connections()
        if checked:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                assert cursor.fetchone()[0] != pid
        else:
            with pytest.raises(Exception, match="terminat"), connection.cursor() as cursor:
                cursor.execute("SELECT 1")
    finally:
        connection.settings_dict["CONN_HEALTH_CHECKS"] = True
