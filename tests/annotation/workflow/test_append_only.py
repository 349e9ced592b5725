"""Label rows cannot be rewritten: read-only in the admin, and on PostgreSQL a trigger refuses
UPDATE and DELETE except where a deletion is deliberate (a campaign deleted in the admin)."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import IntegrityError, connection, transaction

from annotation.models import Campaign, Criterion, Label, Level, Stage, Unit
from annotation.workflow.append_only import label_deletion_allowed
from evaluation.models import Judge, Judgment
from tests.factories import make_answer, make_campaign, make_user

ON_POSTGRES = "postgresql" in settings.DATABASES["default"]["ENGINE"]
needs_trigger = pytest.mark.skipif(not ON_POSTGRES, reason="the trigger exists on PostgreSQL only")


@pytest.fixture
def labelled(db):
    campaign = make_campaign(name="Append only")
    unit = Unit.objects.get(answer=make_answer(campaign=campaign), level=Level.ANSWER)
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    label = Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=1)
    judge = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    judgment = Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=1)
    return campaign, label, judgment


@pytest.fixture
def admin_client(client, db):
    client.force_login(make_user(superuser=True))
    return client


@pytest.mark.parametrize("kind", ["label", "judgment"])
def test_a_superuser_can_read_but_not_change_a_label_or_a_judgment_in_the_admin(kind, labelled, admin_client):
    _, label, judgment = labelled
    row = {"label": label, "judgment": judgment}[kind]
    base = f"/admin/{row._meta.app_label}/{row._meta.model_name}/"
    page = admin_client.get(f"{base}{row.pk}/change/")
    assert page.status_code == 200
    content = page.content.decode()
    assert 'name="_save"' not in content and 'name="value"' not in content
    changed = admin_client.post(f"{base}{row.pk}/change/", {"value": "0", "stage": "imported"})
    assert changed.status_code == 403
    assert admin_client.get(f"{base}add/").status_code == 403
    assert admin_client.post(f"{base}{row.pk}/delete/", {"post": "yes"}).status_code == 403
    bulk = admin_client.post(base, {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"})
    assert bulk.status_code in (200, 302)
    row.refresh_from_db()
    assert row.value == 1


def test_deleting_a_campaign_in_the_admin_takes_its_labels_with_it(labelled, admin_client):
    campaign, label, _ = labelled
    confirm = admin_client.get(f"/admin/annotation/campaign/{campaign.pk}/delete/")
    assert f"imported 1 on unit {label.unit_id}" in confirm.content.decode()
    response = admin_client.post(f"/admin/annotation/campaign/{campaign.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Campaign.objects.filter(pk=campaign.pk).exists()
    assert not Label.objects.filter(pk=label.pk).exists()


def test_deleting_campaigns_in_bulk_in_the_admin_takes_their_labels_with_them(labelled, admin_client):
    campaign, label, _ = labelled
    response = admin_client.post(
        "/admin/annotation/campaign/",
        {"action": "delete_selected", "_selected_action": [campaign.pk], "post": "yes"},
    )
    assert response.status_code == 302
    assert not Label.objects.filter(pk=label.pk).exists()


def _refused(operation) -> str:
    with pytest.raises(IntegrityError) as error, transaction.atomic():
        operation()
    return str(error.value)


@pytest.mark.postgres
@needs_trigger
def test_postgres_refuses_an_update_of_a_label_row_from_any_road(labelled):
    _, label, _ = labelled
    message = _refused(lambda: Label.objects.filter(pk=label.pk).update(value=0))
    assert "append-only" in message and "UPDATE" in message

    def raw_sql():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE annotation_label SET comment = 'edited' WHERE id = %s", [label.pk])

    assert "append-only" in _refused(raw_sql)
    label.value = 0
    _refused(label.save)
    label.refresh_from_db()
    assert (label.value, label.comment) == (1, "")


@pytest.mark.postgres
@needs_trigger
def test_postgres_refuses_a_delete_of_a_label_row_unless_the_transaction_allows_it(labelled):
    _, label, _ = labelled
    assert "DELETE" in _refused(lambda: Label.objects.filter(pk=label.pk).delete())
    # Deleting the unit would take its label: refused the same way.
    _refused(lambda: Unit.objects.filter(pk=label.unit_id).delete())
    with transaction.atomic():
        with label_deletion_allowed():
            # Allowed to delete is not allowed to update.
            _refused(lambda: Label.objects.filter(pk=label.pk).update(value=0))
        # The permission ends with the block, even inside the same transaction.
        _refused(lambda: Label.objects.filter(pk=label.pk).delete())
        with label_deletion_allowed():
            assert Label.objects.filter(pk=label.pk).delete()[0] == 1
    assert not Label.objects.filter(pk=label.pk).exists()


@pytest.mark.postgres
@needs_trigger
def test_deletion_can_only_be_allowed_inside_a_transaction(transactional_db):
    # Outside a transaction the setting would outlive the statement on a kept connection.
    with pytest.raises(RuntimeError, match="transaction"), label_deletion_allowed():
        pass
    with transaction.atomic(), label_deletion_allowed(), connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('attest.label_delete', true)")
        assert cursor.fetchone()[0] == "allowed"
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('attest.label_delete', true)")
        assert cursor.fetchone()[0] in ("", None)


@pytest.mark.postgres
@needs_trigger
def test_the_trigger_is_installed_by_the_migrations(db):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tgname FROM pg_trigger WHERE tgrelid = 'annotation_label'::regclass AND NOT tgisinternal"
        )
        assert [row[0] for row in cursor.fetchall()] == ["annotation_label_append_only"]


def test_labels_and_judgments_stay_appendable(labelled):
    campaign, label, judgment = labelled
    again = Label.objects.create(unit=label.unit, criterion=label.criterion, stage=Stage.REVIEW, value=0)
    assert Label.objects.filter(unit=label.unit).count() == 2 and again.pk > label.pk
    judgment.value = 0
    judgment.save()  # judge runs update their judgments (a retried failure becomes ok)
    judgment.refresh_from_db()
    assert judgment.value == 0 and campaign.judges.count() == 1
