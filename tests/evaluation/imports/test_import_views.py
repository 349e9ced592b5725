from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Answer, Campaign, Membership, Role
from tests.factories import make_user
from tests.ingest_files import DATA, JSONL, RECORDS, bad_content, table_counts

pytestmark = pytest.mark.django_db


def upload(name: str = "answers.jsonl", content: bytes | None = None) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, JSONL.read_bytes() if content is None else content)


@pytest.fixture
def url(campaign):
    return reverse("evaluation:import_into", args=[campaign.slug])


@pytest.fixture
def staff(db):
    user = make_user(username="staff")
    user.is_staff = True
    user.save()
    return user


def test_manager_sees_the_upload_form_with_the_campaign_name(client_for, manager, campaign, url):
    response = client_for(manager).get(url)
    page = response.content.decode()
    assert response.status_code == 200
    assert "<html" in page
    assert 'type="file" name="file"' in page
    assert 'name="mapping"' in page
    assert 'name="update"' in page
    assert f'value="{campaign.name}" readonly' in page


def test_manager_imports_a_file_and_sees_the_summary(client_for, manager, campaign, url):
    response = client_for(manager).post(url, {"file": upload()})
    assert response.status_code == 200
    assert Answer.objects.filter(campaign=campaign).count() == 4
    summary = response.context["summary"]
    assert summary.answers_created == 4
    assert "New answers" in response.content.decode()


def test_the_campaign_name_posted_to_a_campaign_page_is_ignored(client_for, manager, campaign, url):
    client_for(manager).post(url, {"file": upload(), "campaign": "Somewhere else"})
    assert not Campaign.objects.filter(name="Somewhere else").exists()
    assert Answer.objects.filter(campaign=campaign).count() == 4


def test_errors_are_listed_with_file_row_and_field_and_nothing_is_written(client_for, manager, url):
    client = client_for(manager)
    before = table_counts()
    response = client.post(url, {"file": upload(content=bad_content())})
    page = response.content.decode()
    assert response.status_code == 400
    assert table_counts() == before
    assert [(e.file, e.row, e.field) for e in response.context["errors"]] == [("answers.jsonl", 3, "answer")]
    assert "Nothing was imported" in page
    assert "<code>answer</code>" in page


def test_an_htmx_post_gets_only_the_result_fragment(client_for, manager, url):
    response = client_for(manager).post(
        url, {"file": upload(content=bad_content())}, headers={"HX-Request": "true"}
    )
    page = response.content.decode()
    assert response.status_code == 400
    assert "<html" not in page
    assert 'id="import-result"' in page
    assert "must not be empty" in page


def test_mapping_and_update_come_from_the_form(client_for, manager, campaign, url):
    client = client_for(manager)
    mapped = SimpleUploadedFile("export.csv", (DATA / "mapped.csv").read_bytes())
    mapping = SimpleUploadedFile("columns.json", (DATA / "mapping.json").read_bytes())
    assert client.post(url, {"file": mapped, "mapping": mapping}).status_code == 200
    again = client.post(url, {"file": upload(), "update": "on"})
    assert again.status_code == 200
    assert again.context["summary"].answers_replaced == 4


def test_a_file_over_the_import_limit_is_refused_before_it_is_read(client_for, manager, url, settings):
    settings.IMPORT_MAX_BYTES = 1024
    settings.REQUEST_MAX_BYTES = 1024
    content = JSONL.read_bytes()
    assert len(content) > 2048
    response = client_for(manager).post(url, {"file": upload(content=content)})
    assert response.status_code == 413
    assert "at most 2048 bytes" in response.content.decode()
    assert not Answer.objects.exists()


def test_a_post_without_a_file_is_an_error(client_for, manager, url):
    response = client_for(manager).post(url, {})
    assert response.status_code == 400
    assert [e.field for e in response.context["errors"]] == ["file"]


def test_anonymous_is_sent_to_login(client, url):
    for response in (client.get(url), client.post(url, {"file": upload()})):
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))
    assert not Answer.objects.exists()


def test_outsider_gets_404(client_for, outsider, url):
    client = client_for(outsider)
    assert client.get(url).status_code == 404
    assert client.post(url, {"file": upload()}).status_code == 404
    assert not Answer.objects.exists()


@pytest.mark.parametrize("persona", ["annotator", "reviewer", "adjudicator", "analyst"])
def test_members_who_are_not_managers_are_forbidden(client_for, request, persona, url):
    client = client_for(request.getfixturevalue(persona))
    assert client.get(url).status_code == 403
    assert client.post(url, {"file": upload()}).status_code == 403
    assert not Answer.objects.exists()


def test_wrong_method_is_refused(client_for, manager, url):
    client = client_for(manager)
    assert client.put(url).status_code == 405
    assert client.delete(url).status_code == 405


def test_new_campaign_page_is_for_staff_only(client_for, manager, staff):
    url = reverse("evaluation:import_new")
    assert client_for(manager).get(url).status_code == 403
    response = client_for(staff).get(url)
    assert response.status_code == 200
    assert 'name="campaign"' in response.content.decode()


def test_a_manager_is_told_only_staff_create_campaigns_and_offered_their_own(
    client_for, campaign, manager, annotator
):
    url = reverse("evaluation:import_new")
    for method in ("get", "post"):
        response = getattr(client_for(manager), method)(url)
        content = response.content.decode()
        assert response.status_code == 403
        assert "Only staff create campaigns" in content
        assert "roles in this campaign" not in content
        into = reverse("evaluation:import_into", args=[campaign.slug])
        assert f'<a href="{into}">Import into {campaign.name}</a>' in content
        assert 'name="campaign"' not in content
    french = client_for(manager).get(url, HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert "Seul le personnel crée des campagnes" in french
    # Someone who manages no campaign is told the rule alone.
    content = client_for(annotator).get(url).content.decode()
    assert "Only staff create campaigns" in content and "Import into" not in content


def test_staff_creates_a_campaign_by_import_and_becomes_its_manager(client_for, staff):
    response = client_for(staff).post(
        reverse("evaluation:import_new"), {"file": upload(), "campaign": "Nouvelle"}
    )
    assert response.status_code == 200
    campaign = Campaign.objects.get(name="Nouvelle")
    assert Answer.objects.filter(campaign=campaign).count() == 4
    assert Membership.objects.filter(campaign=campaign, user=staff, role=Role.MANAGER).exists()


def test_staff_cannot_import_into_an_existing_campaign_they_do_not_manage(client_for, staff, campaign):
    response = client_for(staff).post(
        reverse("evaluation:import_new"), {"file": upload(), "campaign": campaign.name}
    )
    assert response.status_code == 400
    assert [e.field for e in response.context["errors"]] == ["campaign"]
    assert "choose another name" in response.content.decode()
    assert not Answer.objects.filter(campaign=campaign).exists()


def test_superuser_imports_into_an_existing_campaign_by_name(client_for, campaign):
    admin = make_user(username="root", superuser=True)
    response = client_for(admin).post(
        reverse("evaluation:import_new"), {"file": upload(), "campaign": campaign.name}
    )
    assert response.status_code == 200
    assert Answer.objects.filter(campaign=campaign).count() == 4
    assert not Membership.objects.filter(campaign=campaign, user=admin).exists()


def test_new_campaign_page_needs_a_name(client_for, staff):
    response = client_for(staff).post(reverse("evaluation:import_new"), {"file": upload(), "campaign": " "})
    assert response.status_code == 400
    assert [e.field for e in response.context["errors"]] == ["campaign"]
    assert not Campaign.objects.exists()


def test_deeply_nested_json_is_an_error_naming_file_row_and_field(client_for, manager, url):
    content = (json.dumps(RECORDS[0]) + "\n" + '{"labels": ' + "[" * 2000 + "]" * 2000 + "}\n").encode()
    before = table_counts()
    response = client_for(manager).post(url, {"file": upload(content=content)})
    assert response.status_code == 400
    assert table_counts() == before
    assert [(e.file, e.row, e.field) for e in response.context["errors"]] == [("answers.jsonl", 2, "json")]
    assert "nested too deeply" in response.content.decode()


def test_a_mapping_of_values_from_the_form_translates_as_the_command_does(client_for, manager, campaign, url):
    records = [dict(r, theme={"Finance": "Financial", "RH": "People"}[r["theme"]]) for r in RECORDS]
    content = "".join(json.dumps(r) + "\n" for r in records).encode()
    mapping = SimpleUploadedFile(
        "vocabulary.json",
        json.dumps({"values": {"theme": {"Financial": "Finance", "People": "RH"}}}).encode(),
    )
    response = client_for(manager).post(url, {"file": upload(content=content), "mapping": mapping})
    assert response.status_code == 200
    assert set(campaign.questions.values_list("theme", flat=True)) == {"Finance", "RH"}


def test_a_bad_mapping_from_the_form_names_the_file_and_key(client_for, manager, url):
    mapping = SimpleUploadedFile("vocabulary.json", json.dumps({"values": {"theme": {"A": ""}}}).encode())
    before = table_counts()
    response = client_for(manager).post(url, {"file": upload(), "mapping": mapping})
    assert response.status_code == 400
    assert table_counts() == before
    assert [(e.file, e.field) for e in response.context["errors"]] == [
        ("vocabulary.json", "values['theme']['A']")
    ]


def test_the_page_shows_the_warning_about_chunk_ids_with_several_texts(client_for, manager, url):
    records = [dict(r) for r in RECORDS[:2]]
    records[1]["sources"] = [dict(records[1]["sources"][0], text="Chiffre d'affaires 2023 : [MONTANT].")]
    content = "".join(json.dumps(r) + "\n" for r in records).encode()
    response = client_for(manager).post(url, {"file": upload(content=content)})
    assert response.status_code == 200
    assert (
        "1 chunk id came with several texts (such as &#x27;c1&#x27;: rows 1 and 2)"
        in response.content.decode()
    )


def test_an_upload_kept_in_a_temporary_file_is_imported(client_for, manager, campaign, url, settings):
    # Django's default: uploads over 2.5 MB go to a temporary file instead of memory.
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
    long_text = "Le bail commercial court sur neuf ans à compter de sa signature. " * 800
    records = [
        dict(
            RECORDS[0],
            question_id=f"Q{i}",
            labels={},
            sources=[
                {"id": f"c{i}-{k}", "title": "Bail.pdf", "text": f"{k} {long_text}"} for k in range(1, 4)
            ],
        )
        for i in range(1, 21)
    ]
    content = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()
    assert len(content) > settings.FILE_UPLOAD_MAX_MEMORY_SIZE
    response = client_for(manager).post(url, {"file": upload(content=content)})
    assert response.status_code == 200
    assert response.context["summary"].answers_created == 20
    assert Answer.objects.filter(campaign=campaign).count() == 20
    assert campaign.chunks.get(external_id="c20-3").text == f"3 {long_text}"


def test_the_import_page_links_the_format_and_the_example(client_for, manager, url):
    page = client_for(manager).get(url).content.decode()
    assert reverse("evaluation:import_format") in page
    assert reverse("evaluation:import_example") in page


def test_the_format_page_shows_the_format_reference(client_for, manager):
    response = client_for(manager).get(reverse("evaluation:import_format"))
    page = response.content.decode()
    assert response.status_code == 200
    assert "Fields of a record" in page
    assert "question_id" in page
    assert reverse("evaluation:import_example") in page


def test_the_example_file_is_downloaded_as_jsonl(client_for, manager):
    response = client_for(manager).get(reverse("evaluation:import_example"))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/jsonl; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="attest-example.jsonl"'
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert all(json.loads(line)["answer"] for line in lines)


def test_the_example_file_imports_as_it_is(client_for, manager, campaign, url):
    from evaluation.views.file_import import EXAMPLE

    example = SimpleUploadedFile("attest-example.jsonl", EXAMPLE.read_bytes())
    response = client_for(manager).post(url, {"file": example})
    assert response.status_code == 200
    assert response.context["summary"].answers_created == 5
    assert response.context["summary"].judgments == 5


@pytest.mark.parametrize("name", ["import_format", "import_example"])
def test_the_format_and_example_are_for_logged_in_people_and_get_only(client, client_for, manager, name):
    url = reverse(f"evaluation:{name}")
    assert client.get(url).status_code == 302
    assert client_for(manager).post(url).status_code == 405
