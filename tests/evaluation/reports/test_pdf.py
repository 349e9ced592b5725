"""The report as a PDF: read as the page reads it, in the reader's language, with the methods
paragraph written from the report's own parameters; drawn offline (our static files only)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from django.test import Client
from django.urls import reverse
from weasyprint.urls import URLFetchingError

from annotation.models import Role
from evaluation.estimates.report import compute_report
from evaluation.reports import pdf, read
from tests.evaluation.measures.test_comparison import _outcomes, _version
from tests.factories import add_member, make_user
from tests.judged import judged_campaign

needs_pdftotext = pytest.mark.skipif(
    shutil.which("pdftotext") is None, reason="needs pdftotext (poppler-utils)"
)


def url(campaign, criterion: str = "relevance") -> str:
    return reverse("evaluation:export_pdf", args=[campaign.slug, criterion])


def pdf_text(content: bytes, tmp_path) -> str:
    """The PDF's text as poppler reads it, lines joined (a phrase may wrap across lines)."""
    path = tmp_path / "report.pdf"
    path.write_bytes(content)
    out = subprocess.run(["pdftotext", "-enc", "UTF-8", str(path), "-"], capture_output=True, check=True)
    return " ".join(out.stdout.decode("utf-8").split())


def french_pct(value: float) -> str:
    # pdf_text joins words with plain spaces: the non-breaking space before % becomes one.
    return f"{value * 100:.1f}".replace(".", ",") + " %"


@needs_pdftotext
@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_pdf_holds_the_themes_estimates_and_methods_paragraph_in_the_readers_language(
    language, campaign, analyst, client_for, tmp_path
):
    criterion, judge, _ = judged_campaign(campaign)
    response = client_for(analyst).get(url(campaign), HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/pdf"
    assert response["Content-Disposition"] == (
        'attachment; filename="velmont-due-diligence-relevance-imported-robust.pdf"'
    )
    assert response.content.startswith(b"%PDF-")
    text = pdf_text(response.content, tmp_path)
    report = compute_report(criterion=criterion, judge=judge)
    shown = french_pct if language == "fr" else (lambda v: f"{v * 100:.1f}%")
    for group in [*report.themes, report.overall]:
        assert shown(group.ppi.mean) in text
        assert shown(group.ppi.shown_lo) in text and shown(group.ppi.shown_hi) in text
    for theme in ("Finance", "IT", "<script>alert('x')</script> & RH"):
        assert theme in text  # escaped in the HTML, the name itself in the PDF
    size, n_judge, n_paired = report.overall.size, report.overall.n_judge, report.overall.n_paired
    if language == "en":
        assert "The answer" in text and "How sure we are, and why" in text and "Methods" in text
        assert (
            f"Estimand. The share of the {size} units" in text and "per theme (3 themes) and overall" in text
        )
        assert "The intervals are about this campaign's answers" in text
        assert f"Judge. imported labelled {n_judge} units; it agrees with the final human label on" in text
        assert f"of the {n_paired} units both labelled" in text
        assert "Intervals. PPI++ by the robust method, 95% intervals (alpha = 0.05)" in text
        assert "Figures. Computed now (" in text  # no snapshot stored: computed when asked
    else:
        assert "La réponse" in text and "Avec quelle certitude, et pourquoi" in text and "Méthodes" in text
        assert f"Quantité estimée. La part des {size} unités" in text
        assert "Les intervalles portent sur les réponses de cette campagne" in text
        assert f"Juge. imported a étiqueté {n_judge} unités" in text
        assert "Intervalles. PPI++ par la méthode" in text and "intervalles à 95 % (alpha = 0,05)" in text
        assert "Chiffres. Calculées maintenant (" in text


@needs_pdftotext
def test_the_pdf_says_the_change_against_the_previous_version(db, client, tmp_path):
    first = _version("Assistant v1", _outcomes(1, 0.0))
    second = _version("Assistant v2", _outcomes(2, 0.2))
    user = make_user(username="analyst")
    for campaign in (first, second):
        add_member(campaign=campaign, user=user, roles=[Role.ANALYST])
    client.force_login(user)
    text = pdf_text(client.get(url(second)).content, tmp_path)
    assert "Against the previous version of the assistant (Assistant v1)" in text
    assert "Compared question by question on the 20 questions both versions were asked" in text


@pytest.mark.parametrize("persona", ["annotator", "reviewer", "adjudicator", "outsider"])
def test_the_pdf_has_the_reports_access_rule(persona, campaign, client_for, request):
    judged_campaign(campaign)
    response = client_for(request.getfixturevalue(persona)).get(url(campaign))
    assert response.status_code == (404 if persona == "outsider" else 403)
    assert Client().get(url(campaign)).status_code == 302  # anonymous: to the login page


def test_the_pdf_refuses_a_bad_parameter_naming_it_and_a_post(campaign, analyst, client_for):
    judged_campaign(campaign)
    refused = client_for(analyst).get(url(campaign), {"alpha": "2"})
    assert refused.status_code == 400 and refused.content.decode().startswith("alpha:")
    assert client_for(analyst).post(url(campaign)).status_code == 405


def test_the_report_page_links_its_pdf_with_its_parameters(campaign, analyst, client_for):
    judged_campaign(campaign)
    page = client_for(analyst).get(
        reverse("evaluation:report", args=[campaign.slug, "relevance"]), {"method": "study"}
    )
    assert f'href="{url(campaign)}?method=study"' in page.content.decode()


def test_drawing_a_pdf_fetches_our_stylesheet_and_nothing_else(campaign, tmp_path):
    criterion, judge, _ = judged_campaign(campaign)
    shown = read.read_report(read.report_request(criterion=criterion))
    with open(tmp_path / "report.pdf", "wb") as sink:
        fetcher = pdf.write_pdf(sink=sink, shown=shown, target=0.05)
    assert fetcher.fetched == [pdf.BASE_URL + "static/css/app.css"]
    assert (tmp_path / "report.pdf").read_bytes().startswith(b"%PDF-")


@pytest.mark.parametrize(
    "address",
    [
        "https://example.org/static/css/app.css",  # another host
        "http://attest.invalid/static/css/app.css",  # another scheme
        pdf.BASE_URL + "media/secret.txt",  # not a static file's address
        pdf.BASE_URL + "static/../config/settings.py",  # out of the static files
        pdf.BASE_URL + "static/css/nothing-here.css",
        "file:///etc/passwd",
        "data:text/css,body{}",
    ],
)
def test_the_fetcher_refuses_every_other_address(address):
    fetcher = pdf.StaticFilesOnly()
    with pytest.raises(URLFetchingError):
        fetcher.fetch(address)
    assert fetcher.fetched == []


def test_a_criterion_with_categories_has_its_pdf_too(campaign, analyst, client_for):
    from tests.categorical import categorical_campaign

    criterion, _, _ = categorical_campaign(campaign)
    response = client_for(analyst).get(url(campaign, criterion.name))
    assert response.status_code == 200 and response.content.startswith(b"%PDF-")
