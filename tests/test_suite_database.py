"""The suite's own database: created for the tests whatever they ask for (``django_db_setup`` in
tests/conftest.py), and on PostgreSQL emptied after a transactional test by DELETE with the
triggers off (``emptied_by_delete``), which must leave every table empty and the triggers on."""

from __future__ import annotations

from pathlib import Path

import dj_database_url
import pytest
from django.apps import apps
from django.conf import settings
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction

from annotation.models import Criterion, Label, Level, Stage, Unit
from evaluation.models import Judge, Judgment
from tests.conftest import may_empty_by_delete
from tests.factories import make_answer, make_campaign

pytestmark = pytest.mark.django_db(transaction=True)


def _labelled():
    campaign = make_campaign(name="Flushed")
    unit = Unit.objects.get(answer=make_answer(campaign=campaign), level=Level.ANSWER)
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    label = Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=1)
    judge = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=1)
    return label


def test_the_tests_run_on_a_database_of_their_own():
    """Never on the database the settings name (a developer's, filled by ``make run``), and on
    the one test database made for it (``test_<name>``, with pytest-xdist's suffix), not on a
    test database of the test database."""
    configured = str(dj_database_url.parse(settings.DATABASE_URL)["NAME"])
    name = str(connection.settings_dict["NAME"])
    assert name != configured and "test" in Path(name).name
    if connection.vendor == "postgresql":
        assert name.startswith(f"test_{configured}") and not name.startswith("test_test_")


def test_the_flush_after_a_transactional_test_empties_every_table_and_keeps_the_triggers():
    _labelled()
    # What pytest-django runs after a transactional test.
    call_command("flush", verbosity=0, interactive=False, reset_sequences=False)
    for model in apps.get_models():
        if (
            model._meta.managed
            and not model._meta.proxy
            and model._meta.app_label in ("annotation", "evaluation")
        ):
            assert not model.objects.exists(), model.__name__
    label = _labelled()
    if connection.vendor == "postgresql":
        assert may_empty_by_delete(connection) is True  # CI's role: the flush above deleted
        # The triggers are on again: the append-only rule still refuses a deletion.
        with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
            Label.objects.filter(pk=label.pk).delete()
    assert Label.objects.filter(pk=label.pk).exists()
