"""Personas and shared fixtures."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.utils import translation

from annotation.models import Role
from config.celery import app as celery_app
from tests.factories import PASSWORD, add_member, make_campaign, make_user


def pytest_addoption(parser):
    parser.addoption(
        "--database-tests-only",
        action="store_true",
        help="run only the tests that reach the database or start a worker (make test-sqlite)",
    )


def reaches_database_or_worker(item) -> bool:
    """Whether a test reaches the database (pytest-django refuses any other a connection) or
    starts a worker: the tests whose answer may depend on the database and the broker."""
    from django.test import TransactionTestCase

    cls = getattr(item, "cls", None)
    return (
        item.get_closest_marker("django_db") is not None
        or item.get_closest_marker("worker") is not None
        or "django_db_setup" in getattr(item, "fixturenames", ())
        or (cls is not None and issubclass(cls, TransactionTestCase))
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """With --database-tests-only, deselects the tests that touch neither the database nor the
    worker: pure Python gives on SQLite the answer it gave on PostgreSQL. Then puts first the
    modules that start a worker (``worker_modules_first``)."""
    if config.getoption("database_tests_only"):
        kept, dropped = [], []
        for item in items:
            (kept if reaches_database_or_worker(item) else dropped).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
    browser_or_worker_marks_named(items)
    worker_modules_first(items)


# What `make test-browser` looks for in a test module's text to collect it (Makefile:
# BROWSER_MODULES), rather than import all 200 modules in each process to run the few marked.
BROWSER_OR_WORKER_MARK = re.compile(r"\bmark\.(e2e|worker)\b")


def browser_or_worker_marks_named(items) -> None:
    """Refuses a test marked ``e2e`` or ``worker`` in a module whose text does not name the mark
    (a mark made elsewhere and imported): `make test-browser` would not collect it."""
    texts: dict[Path, str] = {}
    for item in items:
        if item.get_closest_marker("e2e") is None and item.get_closest_marker("worker") is None:
            continue
        if item.path not in texts:
            texts[item.path] = item.path.read_text(encoding="utf-8")
        if not BROWSER_OR_WORKER_MARK.search(texts[item.path]):
            raise pytest.UsageError(
                f"{item.nodeid} is marked e2e or worker, but its module does not say "
                "`pytest.mark.e2e` or `pytest.mark.worker`: `make test-browser` would not collect it"
            )


def worker_modules_first(items) -> None:
    """The modules with a test that starts a worker process first, each module's tests and the
    others in their order. pytest-xdist (``--dist loadfile``) hands modules out in this order as
    processes come free: the worker modules are the longest (the judge's worker tests 100 s), and
    one handed out last kept one process busy long after the others had finished."""
    starts_a_worker = {item.path for item in items if item.get_closest_marker("worker") is not None}
    items.sort(key=lambda item: item.path not in starts_a_worker)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's, which creates the test databases that the collected tests ask for by a
    marker or by its db fixtures. Tests that share a module's rows (``shared_db``) ask by neither:
    a run holding only those got no test database, reached the one the settings name and emptied
    it after their module. The test database is then created here all the same."""
    import dj_database_url
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    with django_db_blocker.unblock():
        created = None
        # Still the database the settings name: none was created. (Not a comparison with the
        # test database's name, which Django derives from the name it has just replaced on
        # PostgreSQL: a second database was then made, migrations and all.)
        if str(connection.settings_dict["NAME"]) == str(
            dj_database_url.parse(django_settings.DATABASE_URL)["NAME"]
        ):
            created = setup_databases(verbosity=0, interactive=False, aliases={"default"})
        by_delete = may_empty_by_delete(connection)
    with emptied_by_delete(by_delete):
        yield
    if created is not None:
        with django_db_blocker.unblock():
            teardown_databases(created, verbosity=0)


def may_empty_by_delete(connection) -> bool:
    """Whether the test database is PostgreSQL and its role may turn the triggers off
    (``emptied_by_delete``)."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        (allowed,) = cursor.fetchone()
    return bool(allowed)


@contextmanager
def emptied_by_delete(enabled: bool) -> Iterator[None]:
    """Inside, when ``enabled`` (``may_empty_by_delete``), the tables are emptied after a
    transactional test (Django's flush: a browser, a worker or a transaction of its own) by
    DELETE with the triggers off (``session_replication_role = replica``), where Django's
    TRUNCATE makes every one of the 43 tables and their indexes anew, test rows or not: 260 ms a
    flush against 58, post_migrate's content types included. The same rows go; the append-only
    triggers, which TRUNCATE does not fire, and the foreign keys, whose rows all go, are not
    checked. Elsewhere, or for a role that may not, Django's own flush."""
    if not enabled:
        yield
        return
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences:
            return truncate(self, style, tables, reset_sequences=True, allow_cascade=allow_cascade)
        # Run by Django's flush in one transaction: SET LOCAL ends with it.
        return ["SET LOCAL session_replication_role = replica"] + [
            f"DELETE FROM {self.quote_name(table)}" for table in tables
        ]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DatabaseOperations, "sql_flush", sql_flush)
        yield


# Tasks run in the test's own process unless a test starts a real worker (see tests/worker.py).
celery_app.conf.task_always_eager = True
celery_app.conf.task_eager_propagates = True
# Each import and recomputation would compute every heavy page at once in the test's process: on
# only where a test turns it on (tests/evaluation/test_page_warming.py).
django_settings.PAGE_WARMING = False


def _static_files_listed_once_per_process() -> None:
    """WhiteNoise lists every static file and works out its headers (about 180 files, 9 ms) each
    time a middleware chain is built, which Django's test client does for each client: thousands
    of times in a run. Listed once per process and per setting that shapes them here, the same
    files with the same headers and responses."""
    from whitenoise.middleware import WhiteNoiseMiddleware

    scan = WhiteNoiseMiddleware.add_files_from_finders
    listed: dict[tuple, dict] = {}

    def add_files_from_finders(self) -> None:
        key = (
            self.static_prefix,
            self.max_age,
            self.allow_all_origins,
            self.charset,
            self.add_headers_function,
            self.index_file,
            # WhiteNoise's own test is a method: bound to each middleware, the same function.
            getattr(self.immutable_file_test, "__func__", self.immutable_file_test),
            tuple(sorted(self.media_types.types_map.items())),
            tuple(map(str, django_settings.STATICFILES_DIRS)),
            tuple(django_settings.STATICFILES_FINDERS),
        )
        if key not in listed:
            before = dict(self.files)
            scan(self)
            listed[key] = {url: file for url, file in self.files.items() if before.get(url) is not file}
        self.files.update(listed[key])

    WhiteNoiseMiddleware.add_files_from_finders = add_files_from_finders  # type: ignore[method-assign]


_static_files_listed_once_per_process()


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
def module_transaction(django_db_setup, django_db_blocker):
    """A transaction around a module's tests, rolled back after its last one: what a module-scoped
    fixture built on it writes is built once (as Django's ``setUpTestData``), and each test runs in
    a savepoint of it (pytest-django's ``db``), so what a test writes is gone for the next one. A
    module's tests that need no rows of their own take a deep copy of the objects built (the
    pattern: a module-scoped ``_things`` on this fixture and a ``things(_things, db)`` returning
    ``copy.deepcopy(_things)``), so that one test's changes to them in memory never reach another."""
    from django.db import transaction
    from django.test import override_settings

    with (
        django_db_blocker.unblock(),
        override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]),
    ):
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            yield
        finally:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)


@pytest.fixture(scope="module")
def loaded_demo(module_transaction):
    """The demo loaded once for a module's tests (a load takes about 13 s of CPU; see
    ``module_transaction``). A person named ``manager`` exists before the load, with a password of
    their own. Returns what ``load_demo`` printed."""
    import io

    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    get_user_model().objects.create_user(username="manager", password="my-own-password")
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    return out.getvalue()
