"""The import page's preview: the file is checked and kept, nothing is written, and only its
owner's confirmation, for the same campaign, before it expires, imports that very file."""

from __future__ import annotations

import json
import os
import time

import pytest
from django.core import signing
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Answer, Campaign, Membership, Role
from evaluation.imports import previews
from tests.factories import add_member, make_user
from tests.ingest_files import JSONL, RECORDS, bad_content, table_counts

pytestmark = pytest.mark.django_db


def upload(content: bytes | None = None, name: str = "answers.jsonl") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, JSONL.read_bytes() if content is None else content)


@pytest.fixture(autouse=True)
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return tmp_path


@pytest.fixture
def url(campaign):
    return reverse("evaluation:import_into", args=[campaign.slug])


def kept() -> list[str]:
    root = previews.previews_dir()
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def preview(client, url, **data):
    return client.post(url, {"file": upload(), "preview": "1", **data})


def test_a_preview_shows_the_counts_and_writes_nothing(client_for, manager, url):
    client = client_for(manager)
    before = table_counts()
    response = preview(client, url)
    page = response.content.decode()
    assert response.status_code == 200
    assert table_counts() == before
    shown = response.context["preview"]
    assert (shown.answers, shown.answers_new, shown.answers_replaced) == (4, 4, 0)
    assert (shown.questions, shown.questions_new) == (2, 2)
    assert [(t.name, t.questions, t.answers) for t in shown.themes] == [("Finance", 1, 2), ("RH", 1, 2)]
    assert [(d.name, d.answers) for d in shown.difficulties] == [("intermediate", 2), ("simple", 2)]
    assert [(x.criterion, x.level, x.units, x.human, x.llm) for x in shown.labels] == [
        ("relevance", "answer", 3, 2, 3)
    ]
    assert "ready to import into" in page
    assert 'name="token"' in page
    assert "Import 4 answers" in page
    assert len(kept()) == 1


def test_a_preview_shows_the_warning_about_chunk_ids_with_several_texts(client_for, manager, url):
    records = [dict(r) for r in RECORDS[:2]]
    records[1]["sources"] = [dict(records[1]["sources"][0], text="Chiffre d'affaires 2023 : [MONTANT].")]
    content = "".join(json.dumps(r) + "\n" for r in records).encode()
    before = table_counts()
    response = client_for(manager).post(url, {"file": upload(content), "preview": "1"})
    assert response.status_code == 200
    assert table_counts() == before
    assert (
        "1 chunk id came with several texts (such as &#x27;c1&#x27;: rows 1 and 2)"
        in response.content.decode()
    )


def test_an_htmx_preview_gets_only_the_result_fragment(client_for, manager, url):
    response = client_for(manager).post(
        url, {"file": upload(), "preview": "1"}, headers={"HX-Request": "true"}
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in page
    assert 'id="import-result"' in page
    assert 'name="token"' in page


def test_confirming_imports_the_previewed_file_and_deletes_it(client_for, manager, campaign, url):
    client = client_for(manager)
    token = preview(client, url).context["preview"].token
    response = client.post(url, {"token": token})
    assert response.status_code == 200
    assert response.context["summary"].answers_created == 4
    assert Answer.objects.filter(campaign=campaign).count() == 4
    assert kept() == []


def test_the_confirmation_keeps_the_choices_made_with_the_file(client_for, manager, campaign, url):
    client = client_for(manager)
    client.post(url, {"file": upload()})
    token = preview(client, url, update="on").context["preview"].token
    response = client.post(url, {"token": token})
    assert response.status_code == 200
    assert response.context["summary"].answers_replaced == 4


def test_a_second_confirmation_of_one_preview_is_refused(client_for, manager, campaign, url):
    client = client_for(manager)
    token = preview(client, url).context["preview"].token
    assert client.post(url, {"token": token}).status_code == 200
    before = table_counts()
    again = client.post(url, {"token": token})
    assert again.status_code == 400
    assert [e.field for e in again.context["errors"]] == ["token"]
    assert "already imported" in again.content.decode()
    assert table_counts() == before


@pytest.mark.parametrize(
    "forge",
    [
        lambda token: token[:-2] + ("AA" if not token.endswith("AA") else "BB"),
        lambda token: signing.dumps({"key": "../../etc", "user": 1, "campaign": "x"}, salt=previews.SALT),
        lambda token: signing.dumps({"key": "k" * 32, "user": 1, "campaign": "x"}),
        lambda token: "not a token",
    ],
)
def test_a_forged_token_is_refused(client_for, manager, url, forge):
    client = client_for(manager)
    token = preview(client, url).context["preview"].token
    before = table_counts()
    response = client.post(url, {"token": forge(token)})
    assert response.status_code == 400
    assert [e.field for e in response.context["errors"]] == ["token"]
    assert table_counts() == before


def test_a_token_naming_another_key_of_the_same_user_is_refused(client_for, manager, campaign, url):
    client = client_for(manager)
    preview(client, url)
    forged = signing.dumps(
        {"key": "A" * 32, "user": manager.pk, "campaign": campaign.name}, salt=previews.SALT
    )
    response = client.post(url, {"token": forged})
    assert response.status_code == 400
    assert "already imported or has expired" in response.content.decode()
    assert not Answer.objects.exists()


def test_an_expired_preview_is_refused(client_for, manager, url, monkeypatch):
    client = client_for(manager)
    token = preview(client, url).context["preview"].token
    monkeypatch.setattr(previews, "PREVIEW_MAX_AGE", -1)
    response = client.post(url, {"token": token})
    assert response.status_code == 400
    assert "expired" in response.content.decode()
    assert not Answer.objects.exists()


def test_another_user_cannot_confirm_your_preview(client_for, manager, campaign, url):
    token = preview(client_for(manager), url).context["preview"].token
    other = make_user(username="other-manager")
    add_member(campaign=campaign, user=other, roles=[Role.MANAGER])
    response = client_for(other).post(url, {"token": token})
    assert response.status_code == 400
    assert "made by someone else" in response.content.decode()
    assert not Answer.objects.exists()
    assert len(kept()) == 1


def test_a_preview_cannot_be_confirmed_into_another_campaign(client_for, manager, campaign, url):
    token = preview(client_for(manager), url).context["preview"].token
    elsewhere = Campaign.objects.create(name="Elsewhere", slug="elsewhere")
    add_member(campaign=elsewhere, user=manager, roles=[Role.MANAGER])
    response = client_for(manager).post(
        reverse("evaluation:import_into", args=[elsewhere.slug]), {"token": token}
    )
    assert response.status_code == 400
    assert not Answer.objects.exists()


def test_a_bad_file_shows_its_errors_and_writes_and_keeps_nothing(client_for, manager, url):
    before = table_counts()
    response = client_for(manager).post(url, {"file": upload(bad_content()), "preview": "1"})
    assert response.status_code == 400
    assert table_counts() == before
    assert [(e.file, e.row, e.field) for e in response.context["errors"]] == [("answers.jsonl", 3, "answer")]
    assert "Nothing was imported" in response.content.decode()
    assert response.context["preview"] is None
    assert kept() == []


def test_an_answer_id_already_in_the_campaign_is_an_error_of_the_preview(client_for, manager, url):
    client = client_for(manager)
    client.post(url, {"file": upload()})
    before = table_counts()
    response = preview(client, url)
    assert response.status_code == 400
    assert {e.field for e in response.context["errors"]} == {"answer_id"}
    assert table_counts() == before


def test_staff_previews_and_confirms_a_new_campaign(client_for):
    staff = make_user(username="staff")
    staff.is_staff = True
    staff.save()
    client = client_for(staff)
    url = reverse("evaluation:import_new")
    response = preview(client, url, campaign="Nouvelle")
    assert response.status_code == 200
    assert not Campaign.objects.filter(name="Nouvelle").exists()
    assert "new campaign" in response.content.decode()
    confirmed = client.post(url, {"token": response.context["preview"].token})
    assert confirmed.status_code == 200
    campaign = Campaign.objects.get(name="Nouvelle")
    assert Answer.objects.filter(campaign=campaign).count() == 4
    assert Membership.objects.filter(campaign=campaign, user=staff, role=Role.MANAGER).exists()


def test_a_new_campaign_taken_meanwhile_by_someone_else_is_refused(client_for):
    staff = make_user(username="staff")
    staff.is_staff = True
    staff.save()
    client = client_for(staff)
    url = reverse("evaluation:import_new")
    token = preview(client, url, campaign="Nouvelle").context["preview"].token
    Campaign.objects.create(name="Nouvelle", slug="nouvelle")
    response = client.post(url, {"token": token})
    assert response.status_code == 400
    assert "choose another name" in response.content.decode()
    assert not Answer.objects.exists()


def test_outsiders_and_other_roles_cannot_confirm(client_for, manager, annotator, outsider, url):
    token = preview(client_for(manager), url).context["preview"].token
    assert client_for(annotator).post(url, {"token": token}).status_code == 403
    assert client_for(outsider).post(url, {"token": token}).status_code == 404
    assert not Answer.objects.exists()


def test_previews_older_than_their_age_are_swept(client_for, manager, url):
    preview(client_for(manager), url)
    (directory,) = previews.previews_dir().iterdir()
    old = time.time() - previews.PREVIEW_MAX_AGE - 10
    os.utime(directory, (old, old))
    assert previews.sweep_expired() == 1
    assert kept() == []


def test_a_preview_counts_the_reference_answers_and_gold_evidence(client_for, manager, url):
    records = [dict(r) for r in RECORDS]
    records[0]["reference_answer"] = "48,2 M€."
    records[0]["gold_evidence"] = ["Le chiffre d'affaires 2023 s'élève à 48,2 M€.", {"chunk_id": "c1"}]
    content = "".join(json.dumps(r) + "\n" for r in records).encode()
    response = client_for(manager).post(url, {"file": upload(content), "preview": "1"})
    page = response.content.decode()
    assert response.status_code == 200
    assert (
        "Questions with a reference answer: 1; with gold evidence: 1 (passage texts: 1, chunk ids: 1)."
        in page
    )
    assert (
        "None: the questions come without reference answers or gold evidence."
        in preview(client_for(manager), url).content.decode()
    )
