"""The import page in a real Chromium under the Content-Security-Policy, DEBUG off: a bad file's
errors appear in the page (htmx swaps the 400 in), a good file is previewed with nothing
written, and the confirmation imports it; through htmx, a file over the limit gets the
refusal in place.

Screenshots go to var/screenshots/.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Answer, Role
from tests.e2e.conftest import needs_chromium, shoot
from tests.e2e.test_pages_e2e import open_context
from tests.e2e.velmont import velmont_campaign
from tests.factories import add_member, make_campaign, make_user
from tests.ingest_files import DATA, JSONL, bad_content, table_counts

HAGRID = DATA / "datasets" / "hagrid.jsonl"

pytestmark = [pytest.mark.e2e, needs_chromium]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("locale", "width", "in_parts"),
    # In parts: pass 1 reads the file in worker processes, as it does a big JSONL file.
    [("en-GB", 1440, False), ("fr-FR", 390, False), ("fr-FR", 1440, True)],
)
def test_a_bad_file_shows_its_errors_then_a_good_one_is_previewed_and_imported(
    live_server, browser, settings, tmp_path, monkeypatch, locale, width, in_parts
):
    assert settings.DEBUG is False
    settings.VAR_DIR = tmp_path
    parts: list[int | None] = []
    if in_parts:
        from annotation.ingest import noting, validate

        real = validate.note_in_parts

        def noted_in_parts(**options):
            parts.append(real(**options))
            return parts[-1]

        monkeypatch.setattr(validate, "note_in_parts", noted_in_parts)
        monkeypatch.setattr(noting, "PARTS_MIN_BYTES", 0)
        monkeypatch.setattr(noting, "PART_BYTES", 600)
    campaign = make_campaign(name="Castelroc (e2e)")
    manager = make_user(username="manon")
    add_member(campaign=campaign, user=manager, roles=[Role.MANAGER])
    context, page, problems = open_context(browser, live_server, width=width, locale=locale, user=manager)
    shot = f"import-{locale[:2]}-{width}"
    page.goto(live_server.url + reverse("evaluation:import_into", args=[campaign.slug]))
    before = table_counts()

    bad = tmp_path / "answers.jsonl"
    bad.write_bytes(bad_content())
    page.set_input_files("#file", str(bad))
    page.click("main form button[type=submit]")
    page.wait_for_selector("#import-result table")
    rows = page.locator("#import-result tbody tr")
    assert rows.count() == 1
    file, row, field, message = rows.first.locator("td").all_inner_texts()
    assert (file, row, field) == ("answers.jsonl", "3", "answer")
    # The refusal speaks the page's language.
    assert ("ne doit pas être vide" if locale.startswith("fr") else "must not be empty") in message
    shoot(page, f"{shot}-errors.png")
    assert table_counts() == before

    good = tmp_path / "good.jsonl"
    good.write_bytes(JSONL.read_bytes())
    page.set_input_files("#file", str(good))
    page.click("main form button[type=submit]")
    page.wait_for_selector(".import-preview")
    shown = page.inner_text(".import-preview")
    assert "Finance" in shown and "RH" in shown and "relevance" in shown
    shoot(page, f"{shot}-preview.png")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert table_counts() == before

    page.click(".import-preview button[type=submit]")
    page.wait_for_selector(".import-preview", state="detached")
    page.wait_for_selector("#import-result .stat")
    assert Answer.objects.filter(campaign=campaign).count() == 4
    # The bad file's part sent the reading back here; the good file was read in parts twice
    # (its preview, then its import).
    assert parts == ([None, 4, 4] if in_parts else [])
    shoot(page, f"{shot}-imported.png")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert page.evaluate("window.__violations") == []
    # The bad file's answer is a 400, which the browser reports; nothing else may fail.
    assert [p for p in problems if "400" not in p] == []
    context.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("locale", "width"), [("en-GB", 1440), ("fr-FR", 390), ("fr-FR", 1440), ("en-GB", 390)]
)
def test_a_published_dataset_imports_as_it_comes_with_the_format_left_to_detection(
    live_server, browser, settings, tmp_path, locale, width
):
    """A HAGRID file, the format select left on its default: the preview says how it is read,
    the criteria it creates and the citation pattern; the confirmation creates them."""
    assert settings.DEBUG is False
    settings.VAR_DIR = tmp_path
    campaign = make_campaign(name="HAGRID (e2e)")
    manager = make_user(username="manon")
    add_member(campaign=campaign, user=manager, roles=[Role.MANAGER])
    context, page, problems = open_context(browser, live_server, width=width, locale=locale, user=manager)
    shot = f"import-dataset-{locale[:2]}-{width}"
    page.goto(live_server.url + reverse("evaluation:import_into", args=[campaign.slug]))
    assert page.input_value("#format") == ""
    french = locale.startswith("fr")
    assert ("Reconnu d’après le fichier" if french else "Detected from the file") in page.inner_text(
        "#format"
    )
    before = table_counts()

    page.set_input_files("#file", str(HAGRID))
    page.click("main form button[type=submit]")
    page.wait_for_selector(".import-preview")
    shown = page.inner_text(".import-preview")
    assert ("Lu comme un fichier HAGRID" if french else "Read as a HAGRID file") in shown
    assert "answer_attributable" in shown and r"\[(\d+)\]" in shown
    shoot(page, f"{shot}-preview.png")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert table_counts() == before

    page.click(".import-preview button[type=submit]")
    page.wait_for_selector(".import-preview", state="detached")
    page.wait_for_selector("#import-result .stat")
    assert ("Critères créés" if french else "Criteria created") in page.inner_text("#import-result")
    assert Answer.objects.filter(campaign=campaign).count() == 3
    assert set(campaign.criteria.values_list("name", flat=True)) >= {"attributable", "answer_informative"}
    shoot(page, f"{shot}-imported.png")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert page.evaluate("window.__violations") == []
    assert problems == []
    context.close()


@pytest.mark.django_db(transaction=True)
def test_the_import_page_shows_refusals_and_errors_in_place(live_server, browser, settings, tmp_path):
    """With JavaScript on (the form posts through htmx), a file over the limit gets the refusal
    (413, the body unread) and a bad file the table of its errors (400); nothing is imported."""
    campaign, _, _, _ = velmont_campaign()
    manager = make_user(username="manon")
    add_member(campaign=campaign, user=manager, roles=[Role.MANAGER])
    context, page, problems = open_context(browser, live_server, user=manager)
    url = live_server.url + reverse("evaluation:import_into", args=[campaign.slug])
    answers = Answer.objects.count()
    page.goto(url)
    bad = tmp_path / "answers.jsonl"
    bad.write_bytes(bad_content())
    page.set_input_files("#file", str(bad))
    page.click("main button[type=submit]")
    page.wait_for_selector("text=Nothing was imported")
    settings.IMPORT_MAX_BYTES = 1024
    settings.REQUEST_MAX_BYTES = 1024
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"{}\n" * 2000)
    page.goto(url)
    page.set_input_files("#file", str(big))
    page.click("main button[type=submit]")
    page.wait_for_selector("text=Request refused")
    assert "this page accepts at most 2048 bytes" in page.inner_text("main")
    assert page.evaluate("window.__violations") == []
    assert Answer.objects.count() == answers
    assert [p for p in problems if "400" not in p and "413" not in p] == []
    context.close()
