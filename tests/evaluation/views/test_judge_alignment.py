"""The judge alignment page, its CSV and JSON: access by role (the blindness rule), figures equal
to the measure's, the form, the report's links, a number of queries that does not grow with the
units, and French."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime

import pytest
from django.urls import reverse

from annotation.models import Criterion
from evaluation.designs import held_out
from evaluation.models import HeldOutSplit, Judge
from evaluation.reports import measure_tables
from tests.evaluation.measures.test_judge_alignment import TABLE, labelled
from tests.judged import judged_campaign
from tests.test_french_pages import Data, offences

FRENCH = {"HTTP_ACCEPT_LANGUAGE": "fr"}


def url(campaign, name: str = "evaluation:judge_alignment", criterion: str = "relevance") -> str:
    return reverse(name, args=[campaign.slug, criterion])


@pytest.fixture
def judge(campaign):
    # A name no random token (CSRF, CSP nonce) can hold: three letters did, once in a few thousand.
    judge = Judge.objects.create(campaign=campaign, name="gpt judge", kind=Judge.Kind.OPENAI, model="m")
    labelled(campaign, TABLE, judge=judge)
    return judge


@pytest.mark.parametrize("persona", ["analyst", "manager"])
def test_managers_and_analysts_see_each_judge_with_its_intervals(
    persona, campaign, judge, client_for, request
):
    response = client_for(request.getfixturevalue(persona)).get(url(campaign))
    assert response.status_code == 200
    content = response.content.decode()
    (version,) = response.context["result"].judges
    assert version.overall.confusion == {"tp": 4, "fp": 1, "fn": 2, "tn": 3}
    assert 'data-judge="gpt judge"' in content
    assert "70.0%" in content and "[39.7%, 89.2%]" in content  # agreement and its Wilson interval
    assert "66.7%" in content and "75.0%" in content  # sensitivity, specificity
    assert "0.40" in content  # kappa
    assert 'data-cell="tp">4<' in content and 'data-cell="tn">3<' in content
    # Ceiling 1.4: at most 28.6% fewer labels; this judge's factor 1.2: 16.7% fewer.
    assert "28.6%" in content and "1.40" in content and "16.7%" in content
    assert 'id="drift-title"' in content and 'data-kind="half"' in content
    assert 'value="0.05"' in content and 'value="answer" selected' in content


@pytest.mark.parametrize("persona", ["annotator", "reviewer", "adjudicator", "outsider"])
@pytest.mark.parametrize(
    "name",
    ["evaluation:judge_alignment", "evaluation:judge_alignment_csv", "evaluation:judge_alignment_json"],
)
def test_people_who_label_get_403_and_outsiders_404(persona, name, campaign, judge, client_for, request):
    response = client_for(request.getfixturevalue(persona)).get(url(campaign, name))
    assert response.status_code == (404 if persona == "outsider" else 403)
    assert b"gpt judge" not in response.content


def test_the_form_reads_alpha_and_the_clusters(campaign, judge, client_for, analyst):
    response = client_for(analyst).get(url(campaign), {"alpha": "0.1", "clusters": "question"})
    assert response.status_code == 200
    result = response.context["result"]
    assert result.alpha == 0.1 and result.clusters == "question"
    bad = client_for(analyst).get(url(campaign), {"alpha": "2"})
    assert bad.status_code == 400 and "alpha" in bad.content.decode()
    assert bad.context["result"].alpha == 0.05


def test_an_unknown_criterion_is_404(campaign, judge, client_for, analyst):
    assert client_for(analyst).get(url(campaign, criterion="nope")).status_code == 404


def test_a_drift_is_flagged_on_the_page(campaign, client_for, analyst):
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    labelled(campaign, [(1, 1), (0, 0)] * 15, judge=judge, at=datetime(2026, 10, 5, tzinfo=UTC))
    labelled(campaign, [(1, 0), (0, 0)] * 15, judge=judge, at=datetime(2026, 11, 5, tzinfo=UTC))
    content = client_for(analyst).get(url(campaign)).content.decode()
    assert 'id="drift-flagged"' in content and 'data-flagged="1"' in content
    assert "2026-10" in content and "2026-11" in content and "-50.0 pts" in content


def test_csv_and_json_hold_the_figures(campaign, judge, client_for, analyst):
    response = client_for(analyst).get(url(campaign, "evaluation:judge_alignment_csv"))
    assert response.status_code == 200
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == list(measure_tables.JUDGE_ALIGNMENT_CSV_HEADER)
    overall = next(row for row in rows if row[5] == "overall")
    assert overall[:12] == ["gpt judge", "openai", "m", "", "", "overall", "10", "10", "4", "1", "2", "3"]
    assert float(overall[12]) == pytest.approx(0.7)
    data = json.loads(client_for(analyst).get(url(campaign, "evaluation:judge_alignment_json")).content)
    assert data["judges"][0]["overall"]["agreement"]["value"] == pytest.approx(0.7)
    assert data["alpha"] == 0.05 and data["criterion"] == "relevance"


def test_the_report_links_to_the_page(campaign, client_for, analyst):
    criterion, _imported, _lexical = judged_campaign(campaign, second_judge=True)
    content = (
        client_for(analyst).get(reverse("evaluation:report", args=[campaign.slug, criterion.name])).content
    )
    link = url(campaign).encode()
    # In "See also" and under the judges compared.
    assert content.count(link) == 2


def test_the_queries_do_not_grow_with_the_units(campaign, client_for, analyst, django_assert_num_queries):
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    labelled(campaign, [(1, 1), (0, 0)] * 3, judge=judge)
    client = client_for(analyst)
    # Session, user, campaign and roles, criterion, candidate judges, the held-out split, final
    # labels, prompts, judgments.
    with django_assert_num_queries(10):
        assert client.get(url(campaign)).status_code == 200
    labelled(campaign, [(1, 0), (0, 0), (1, 1)] * 20, judge=judge, theme="IT")
    second = Judge.objects.create(campaign=campaign, name="lexical", kind=Judge.Kind.LEXICAL)
    labelled(campaign, [(1, 0), (0, 0)] * 10, judge=second)
    with django_assert_num_queries(10):
        assert client.get(url(campaign)).status_code == 200
    # With a split, the same queries: each unit's side is a hash of its question, not a row.
    held_out.make_split(criterion=Criterion.objects.get(campaign=campaign, name="relevance"), seed=7)
    with django_assert_num_queries(10):
        assert client.get(url(campaign)).status_code == 200


def test_the_page_speaks_french(campaign, judge, client_for, analyst):
    labelled(campaign, [(1, 1), (0, 0)] * 6, judge=judge, at=datetime(2026, 10, 5, tzinfo=UTC))
    french = client_for(analyst).get(url(campaign), **FRENCH).content.decode()
    assert "Les juges face aux étiquettes humaines" in french and "86,4" in french
    data = Data(exact={"gpt judge", "analyst", "Finance", campaign.name, "m"})
    assert offences(french, data=data) == []
    empty = client_for(analyst).get(url(campaign, criterion="correctness"), **FRENCH).content.decode()
    assert offences(empty, data=data) == []


def test_a_manager_sets_the_split_aside_once_and_others_may_not(
    campaign, judge, client_for, manager, analyst
):
    page = client_for(analyst).get(url(campaign)).content.decode()
    assert 'id="alignment-part"' in page and 'class="split-form"' not in page
    assert 'name="part"' in page and 'value="all" selected' in page
    assert client_for(analyst).post(url(campaign)).status_code == 403
    assert not HeldOutSplit.objects.exists()
    manager_client = client_for(manager)
    assert 'class="split-form"' in manager_client.get(url(campaign)).content.decode()
    response = manager_client.post(url(campaign))
    assert response.status_code == 302 and response["Location"] == url(campaign)
    split = HeldOutSplit.objects.get()
    assert split.created_by == manager and split.criterion.name == "relevance"
    # A second press keeps the split as it was.
    manager_client.post(url(campaign))
    assert HeldOutSplit.objects.get().seed == split.seed
    assert 'class="split-form"' not in manager_client.get(url(campaign)).content.decode()


def test_with_a_split_the_page_reports_on_the_held_out_part_and_compares_on_the_selection_part(
    campaign, judge, client_for, analyst
):
    labelled(campaign, [(1, 1), (0, 0), (1, 0)] * 10, judge=judge, theme="IT")
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    split, _made = held_out.make_split(criterion=criterion, seed=20261205)
    client = client_for(analyst)
    response = client.get(url(campaign))
    assert response.status_code == 200
    result = response.context["result"]
    assert (result.part, result.figures_part, result.comparisons_part) == ("split", "held_out", "selection")
    content = response.content.decode()
    held = result.parts["held_out"]
    assert 'value="split" selected' in content
    assert f"{held.units} units ({held.questions} questions)" in content
    assert "20261205" in content and split.created_at.strftime("%Y-%m-%d") in content
    assert result.judges[0].overall.n == held.units
    on_selection = client.get(url(campaign), {"part": "selection"}).context["result"]
    assert on_selection.judges[0].overall.n == result.parts["selection"].units
    rows = list(
        csv.reader(io.StringIO(client.get(url(campaign, "evaluation:judge_alignment_csv")).content.decode()))
    )
    assert rows[0][-1] == "part" and {row[-1] for row in rows[1:]} == {"held_out"}
    data = json.loads(client.get(url(campaign, "evaluation:judge_alignment_json"), {"part": "all"}).content)
    assert data["part"] == "all" and data["split"]["seed"] == 20261205
    assert data["split"]["parts"]["all"]["units"] == data["judges"][0]["overall"]["n"]
    french = client.get(url(campaign), **FRENCH).content.decode()
    assert "partie réservée" in french
    data_words = Data(exact={"gpt", "analyst", "Finance", "IT", campaign.name, "m", "20261205"})
    assert offences(french, data=data_words) == []


def test_a_part_without_a_split_is_refused_by_name(campaign, judge, client_for, analyst):
    response = client_for(analyst).get(url(campaign), {"part": "held_out"})
    assert response.status_code == 400 and "part" in response.content.decode()
    assert response.context["result"].part == "all"
    csv_response = client_for(analyst).get(
        url(campaign, "evaluation:judge_alignment_csv"), {"part": "held_out"}
    )
    assert csv_response.status_code == 400
