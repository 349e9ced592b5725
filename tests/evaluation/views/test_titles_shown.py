"""Wherever a person reads a criterion, the pages show its title (the built-in ones in the
reader's language), never its slug: page titles, headings, breadcrumbs, selects, the compare and
history pages, the label history, the stability page; the workbook's Summary and the API's
campaign carry the titles beside the names."""

from __future__ import annotations

import io
import re
import zipfile

import pytest
from django.urls import reverse
from openpyxl import load_workbook

from annotation.models import Criterion
from tests.factories import api_token, make_judge, member

pytestmark = pytest.mark.django_db

TITLE = "Tone of voice"


@pytest.fixture
def tone(campaign):
    criterion = Criterion.objects.create(campaign=campaign, name="tone_b", title=TITLE, level="answer")
    make_judge(campaign=campaign, name="gpt", criteria=("tone_b", "relevance"))
    return criterion


def visible(html: str) -> str:
    """The text a person reads: no tags, no attributes, no URLs."""
    html = re.sub(r"<(script|style|svg)\b.*?</\1>", "", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", html)


def report_url(campaign, page: str = "report") -> str:
    return reverse(f"evaluation:{page}", args=[campaign.slug, "tone_b"])


@pytest.mark.parametrize(
    ("page", "heading"),
    [
        ("report", f"<title>{TITLE} report"),
        ("history", f"How the {TITLE} estimates moved"),
        ("compare", f"{TITLE}: two campaigns side by side"),
        ("disagreements", f"Where humans and the judge disagree: {TITLE}"),
    ],
)
def test_the_report_pages_name_the_criterion_by_its_title(page, heading, campaign, tone, manager, client_for):
    response = client_for(manager).get(report_url(campaign, page))
    content = response.content.decode()
    assert response.status_code == 200, content[:400]
    assert heading in content
    if page != "report":
        assert f"Report: {TITLE}</a>" in content  # the breadcrumb back to the report
    assert "tone_b" not in visible(content)


def test_the_report_names_every_criterion_of_its_navigation_by_title(campaign, tone, manager, client_for):
    content = client_for(manager).get(report_url(campaign)).content.decode()
    assert f'<strong aria-current="page">{TITLE}</strong>' in content
    assert ">Relevance</a>" in content and ">relevance</a>" not in content
    french = client_for(manager).get(report_url(campaign), HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert ">Pertinence</a>" in french  # a built-in title, in the reader's language


@pytest.mark.parametrize(
    ("name", "option"),
    [
        ("annotation:sampling", f">{TITLE} (answer)</option>"),
        ("evaluation:run_list", f">{TITLE} (answer)</option>"),
        ("evaluation:stability", f">{TITLE}</option>"),
        ("annotation:history", f">{TITLE}</option>"),
        ("evaluation:confidence_sample", f">{TITLE} (answer)</option>"),
    ],
)
def test_the_selects_show_titles(name, option, campaign, tone, manager, client_for):
    response = client_for(manager).get(reverse(name, args=[campaign.slug]))
    content = response.content.decode()
    # The confidence page refuses its defaults here (no judge gave confidences): its select stays.
    assert response.status_code == (400 if name == "evaluation:confidence_sample" else 200)
    assert option in content
    assert "tone_b" not in visible(content)


def test_the_criterion_page_is_titled_by_the_title_and_names_the_slug_once(
    campaign, tone, manager, client_for
):
    content = (
        client_for(manager).get(reverse("annotation:criterion_edit", args=[campaign.slug, "tone_b"])).content
    )
    text = content.decode()
    assert f"<title>{TITLE} · Criteria" in text and f"<h1>{TITLE} " in text
    assert "<code>tone_b</code>" in text  # the name that URLs, files and the API use


def test_the_workbook_summary_gives_each_criterion_its_title(campaign, tone, manager, client_for):
    response = client_for(manager).get(report_url(campaign, "export_xlsx"))
    workbook = load_workbook(io.BytesIO(response.content))
    rows = list(workbook["Summary"].iter_rows(values_only=True))
    header, first = rows[2], rows[3]
    assert header[:2] == ("criterion", "title") and first[:2] == ("tone_b", TITLE)
    with zipfile.ZipFile(io.BytesIO(response.content)) as packed:
        charts = [packed.read(name).decode() for name in packed.namelist() if name.startswith("xl/charts/")]
    assert any(f"{TITLE}: PPI++ estimate per theme" in chart for chart in charts)


def test_the_api_gives_the_titles_beside_the_names(campaign, tone, client):
    token = api_token(member(campaign, "analyst"))
    body = client.get(f"/api/v1/campaigns/{campaign.slug}", HTTP_AUTHORIZATION=f"Bearer {token}").json()
    assert body["criteria"] == ["citation_support", "relevance", "tone_b", "veracity"]
    assert body["criterion_titles"]["tone_b"] == TITLE
    assert body["criterion_titles"]["relevance"] == "Relevance"
