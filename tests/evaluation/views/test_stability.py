"""The stability page and its CSV: access by role, defaults, numbers equal compute_stability's,
a constant number of queries, escaping."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from annotation.models import Answer, Criterion, Question, Unit
from evaluation.measures import stability
from evaluation.models import Judge, Judgment
from evaluation.reports import measure_tables
from tests.evaluation.measures.test_stability import repeated
from tests.factories import import_label, make_answer, make_judge
from tests.judged import HOSTILE, judged_campaign

TABLE = {"Finance-1": [1, 1, 0], "Finance-2": [0, 0, 0], "IT-1": [1, 1, 1]}


def url(campaign, name: str = "evaluation:stability") -> str:
    return reverse(name, args=[campaign.slug])


@pytest.fixture
def judge(campaign):
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    repeated(
        campaign, TABLE, judge=judge, criterion=Criterion.objects.get(campaign=campaign, name="relevance")
    )
    return judge


@pytest.mark.parametrize("persona", ["analyst", "manager"])
def test_managers_and_analysts_see_the_figures_with_the_defaults(
    persona, campaign, judge, client_for, request
):
    response = client_for(request.getfixturevalue(persona)).get(url(campaign))
    assert response.status_code == 200
    content = response.content.decode()
    result = response.context["result"]
    # Defaults: the first criterion by name (relevance), the only judge, alpha 0.05.
    assert result.measure.name == "relevance" and result.judge == "gpt" and result.alpha == 0.05
    assert "<svg" in content and "Repetitions per question" in content
    assert 'data-question="Finance-1"' in content and "1 1 0" in content
    assert "66.7%" in content  # Finance-1's rate, and ICC 0.67
    assert "0.67" in content
    assert 'value="criterion:relevance" selected' in content


@pytest.mark.parametrize("persona", ["annotator", "reviewer", "adjudicator", "outsider"])
@pytest.mark.parametrize(
    "name", ["evaluation:stability", "evaluation:stability_csv", "evaluation:stability_json"]
)
def test_people_who_label_get_403_and_outsiders_404(persona, name, campaign, judge, client_for, request):
    response = client_for(request.getfixturevalue(persona)).get(url(campaign, name))
    assert response.status_code == (404 if persona == "outsider" else 403)
    assert b"Finance-1" not in response.content


def test_anonymous_is_sent_to_login_and_post_is_refused(campaign, analyst, judge, client, client_for):
    response = client.get(url(campaign))
    assert response.status_code == 302 and reverse("login") in response["Location"]
    assert client_for(analyst).post(url(campaign)).status_code == 405


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"alpha": "2"}, "alpha"),
        ({"draws": "0"}, "draws"),
        ({"draws": "500"}, "draws"),
        ({"measure": "criterion:nope"}, "measure"),
        ({"source": "crowd"}, "source"),
        ({"judge": "other"}, "judge"),
        ({"seed": "-1"}, "seed"),
    ],
)
def test_a_bad_parameter_is_400_with_a_message_naming_it(query, field, campaign, analyst, judge, client_for):
    response = client_for(analyst).get(url(campaign), query)
    assert response.status_code == 400
    assert f"<li>{field}: " in response.content.decode()
    assert "result" not in response.context


def test_without_any_repeated_answer_the_page_says_why_instead_of_no_data(campaign, analyst, client_for):
    response = client_for(analyst).get(url(campaign))
    content = response.content.decode()
    assert response.status_code == 200
    # Nothing labeled: the response metric, which every answer has.
    assert response.context["result"].measure == stability.Measure("metric", "response")
    assert response.context["result"].empty == stability.NO_REPETITIONS
    assert "No question of this campaign has two answers or more" in content
    assert "No data" not in content and "<svg" not in content
    french = client_for(analyst).get(url(campaign), HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert "Aucune question de cette campagne n’a deux réponses ou plus" in french


def test_the_page_opens_on_a_criterion_a_judge_labeled_rather_than_the_first_by_name(
    campaign, analyst, judge, client_for
):
    Criterion.objects.create(campaign=campaign, name="accuracy", title="Accuracy", level="answer")
    response = client_for(analyst).get(url(campaign))
    assert (
        response.context["result"].measure.name == "relevance" and response.context["result"].judge == "gpt"
    )
    assert 'value="criterion:relevance" selected' in response.content.decode()


def test_with_human_labels_only_the_page_opens_on_them(campaign, analyst, client_for):
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    for key, values in TABLE.items():
        question = Question.objects.create(campaign=campaign, external_id=key, text="?", theme="Finance")
        for repetition, value in enumerate(values, start=1):
            answer = make_answer(campaign=campaign, question=question)
            Answer.objects.filter(pk=answer.pk).update(repetition=repetition)
            import_label(
                unit=Unit.objects.get(answer=answer, level="answer"), criterion=relevance, value=value
            )
    response = client_for(analyst).get(url(campaign))
    result = response.context["result"]
    assert (result.measure.name, result.source, result.empty) == ("relevance", "human", "")
    assert result.overall.questions == 3


def test_labels_on_one_answer_per_question_are_said_to_compare_nothing(campaign, analyst, client_for):
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    repeated(campaign, {"Finance-1": [1], "IT-1": [0]}, judge=judge, criterion=relevance)
    question = Question.objects.get(external_id="IT-1")
    make_answer(campaign=campaign, question=question)  # a second answer, never judged
    response = client_for(analyst).get(url(campaign))
    assert response.context["result"].empty == stability.SINGLE_VALUES
    assert "The values of “Relevance” cover one answer per question at most" in response.content.decode()


def test_a_judge_or_people_that_labeled_nothing_are_named(campaign, analyst, judge, client_for):
    response = client_for(analyst).get(url(campaign), {"measure": "criterion:veracity", "source": "human"})
    content = response.content.decode()
    assert response.context["result"].empty == stability.NO_VALUES
    assert "No answer has a final human label of “Veracity” yet" in content
    labeled = client_for(analyst).get(url(campaign), {"measure": "criterion:relevance", "judge": "gpt"})
    assert labeled.context["result"].empty == ""


def test_with_several_judges_and_none_primary_the_page_asks_which(campaign, analyst, judge, client_for):
    make_judge(campaign=campaign, name="other")
    response = client_for(analyst).get(url(campaign))
    assert response.status_code == 200 and "result" not in response.context
    assert 'id="choose-judge"' in response.content.decode()
    chosen = client_for(analyst).get(url(campaign), {"judge": judge.name})
    assert chosen.status_code == 200 and chosen.context["result"].judge == judge.name


def test_metrics_and_human_labels_are_offered(campaign, analyst, judge, client_for):
    response = client_for(analyst).get(url(campaign), {"measure": "metric:response"})
    assert response.status_code == 200
    assert response.context["result"].source == "metric"
    assert "Values: the automatic metric" in response.content.decode()


def test_numbers_shown_equal_compute_stability(campaign, analyst, judge, client_for):
    response = client_for(analyst).get(url(campaign), {"alpha": "0.1", "draws": "7", "seed": "3"})
    expected = stability.compute_stability(
        campaign=campaign,
        measure=stability.Measure("criterion", "relevance"),
        judge=judge,
        alpha=0.1,
        draws=7,
        seed=3,
    )
    assert response.context["result"] == expected


def test_a_constant_number_of_queries_whatever_the_number_of_answers(
    campaign, analyst, judge, client_for, django_assert_num_queries
):
    client = client_for(analyst)
    # Session, user, campaign (its content version with it), roles, criteria, judges, the
    # judgments' version, judge labels per answer, answers.
    with django_assert_num_queries(9):
        first = client.get(url(campaign))
    # Nothing recorded since: the figures come from the cache.
    with django_assert_num_queries(7):
        again = client.get(url(campaign))
    assert stability.stability_as_json(stability=again.context["result"]) == stability.stability_as_json(
        stability=first.context["result"]
    )
    repeated(
        campaign,
        {f"HR-{i}": [1, 0, 1, 1] for i in range(6)},
        judge=judge,
        criterion=Criterion.objects.get(campaign=campaign, name="relevance"),
    )
    with django_assert_num_queries(9):
        response = client.get(url(campaign))
    assert response.context["result"].overall.questions == first.context["result"].overall.questions + 6


def test_a_new_judgment_or_label_moves_the_figures_at_once(campaign, analyst, judge, client_for):
    client = client_for(analyst)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    rate = client.get(url(campaign)).context["result"].overall.estimate.mean
    # A retry that succeeds updates its judgment in place: the count does not move, the time does.
    judgment = Judgment.objects.filter(judge=judge, criterion=relevance, value=0).first()
    judgment.value = 1
    judgment.save()
    moved = client.get(url(campaign)).context["result"].overall.estimate.mean
    assert moved > rate
    human = url(campaign) + "?source=human"
    assert client.get(human).context["result"].overall.questions == 0
    unit = Unit.objects.filter(answer__question__external_id="IT-1", level="answer").first()
    import_label(unit=unit, criterion=relevance, value=1)
    assert client.get(human).context["result"].overall.answers == 1


def test_csv_has_one_row_per_question_with_formulas_neutralised(campaign, analyst, judge, client_for):
    Question.objects.filter(external_id="IT-1").update(external_id="=HYPERLINK(1)")
    response = client_for(analyst).get(url(campaign, "evaluation:stability_csv"))
    assert response.status_code == 200
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == list(measure_tables.STABILITY_CSV_HEADER)
    assert rows[1][:5] == ["Finance-1", "Finance", "simple", "3", str(round(2 / 3, 6))]
    assert rows[1][-2:] == ["1", "1 1 0"]
    assert any(row[0] == "'=HYPERLINK(1)" for row in rows)
    bad = client_for(analyst).get(url(campaign, "evaluation:stability_csv"), {"alpha": "7"})
    assert bad.status_code == 400 and b"alpha" in bad.content


def test_theme_and_question_names_are_escaped(campaign, analyst, judge, client_for):
    Question.objects.filter(external_id="IT-1").update(theme=HOSTILE, external_id="<b>q</b>")
    content = client_for(analyst).get(url(campaign)).content.decode()
    assert "<script>alert" not in content and "<b>q</b>" not in content
    assert "&lt;script&gt;" in content


def test_the_report_links_to_the_stability_of_its_criterion(campaign, analyst, client_for):
    judged_campaign(campaign)
    content = client_for(analyst).get(reverse("evaluation:report", args=[campaign.slug, "relevance"])).content
    assert (url(campaign) + "?measure=criterion:relevance&amp;judge=imported").encode() in content


def test_json_download_is_the_commands_json(campaign, analyst, judge, client_for):
    response = client_for(analyst).get(url(campaign, "evaluation:stability_json"), {"draws": "5"})
    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
    assert response["Content-Disposition"].endswith('-relevance-judge-stability.json"')
    expected = stability.stability_as_json(
        stability=stability.compute_stability(
            campaign=campaign, measure=stability.Measure("criterion", "relevance"), judge=judge, draws=5
        )
    )
    assert response.json() == expected
