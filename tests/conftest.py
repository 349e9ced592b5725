"""Personas and shared fixtures."""

from __future__ import annotations

import pytest
from django.utils import translation

from annotation.models import Role
from config.celery import app as celery_app
from tests.factories import PASSWORD, add_member, make_campaign, make_user

# Tasks run in the test's own process unless a test starts a real worker (see tests/worker.py).
celery_app.conf.task_always_eager = True
celery_app.conf.task_eager_propagates = True


@pytest.fixture(autouse=True)
def _english_after_each_test():
    """A request in French leaves French active in the test's thread: the next test starts in
    the default language again."""
    yield
    translation.activate("en")


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """Users are made by the hundred here: a deliberately slow hasher would dominate the run."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def password() -> str:
    return PASSWORD


@pytest.fixture
def campaign(db):
    return make_campaign(name="Velmont due diligence")


@pytest.fixture
def manager(campaign):
    user = make_user(username="manager")
    add_member(campaign=campaign, user=user, roles=[Role.MANAGER])
    return user


@pytest.fixture
def annotator(campaign):
    user = make_user(username="annotator")
    add_member(campaign=campaign, user=user, roles=[Role.ANNOTATOR])
    return user


@pytest.fixture
def reviewer(campaign):
    user = make_user(username="reviewer")
    add_member(campaign=campaign, user=user, roles=[Role.REVIEWER])
    return user


@pytest.fixture
def adjudicator(campaign):
    user = make_user(username="adjudicator")
    add_member(campaign=campaign, user=user, roles=[Role.ADJUDICATOR])
    return user


@pytest.fixture
def analyst(campaign):
    user = make_user(username="analyst")
    add_member(campaign=campaign, user=user, roles=[Role.ANALYST])
    return user


@pytest.fixture
def outsider(db):
    return make_user(username="outsider")


@pytest.fixture
def client_for(client):
    """Log a persona in: ``client_for(user)`` returns the test client logged in as ``user``."""

    def login(user):
        client.force_login(user)
        return client

    return login


@pytest.fixture(scope="module")
def loaded_demo(django_db_setup, django_db_blocker):
    """The demo loaded once for a module's tests (a load takes about 13 s of CPU), in a transaction
    rolled back after the module's last test: each test runs in a savepoint of it (pytest-django's
    ``db``), so what a test writes is gone for the next one. A person named ``manager`` exists
    before the load, with a password of their own. Returns what ``load_demo`` printed."""
    import io

    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import transaction
    from django.test import override_settings

    with (
        django_db_blocker.unblock(),
        override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]),
    ):
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            get_user_model().objects.create_user(username="manager", password="my-own-password")
            out = io.StringIO()
            call_command("load_demo", stdout=out)
            yield out.getvalue()
        finally:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)
