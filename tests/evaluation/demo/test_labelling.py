"""The demo's human work: veracity and citation support labelled through the workflow, so that
every report of the fresh demo has human labels and PPI++ on every theme, and some work is left
for each role."""

from __future__ import annotations

import io
import math

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from annotation.models import Criterion, Label, Stage
from annotation.workflow import STAGE_ROLE
from annotation.workflow.queue import available_counts
from evaluation.demo.labelling import NOT_DEDUCIBLE, truth
from evaluation.demo.versions import OFF_TOPIC_PARAGRAPHS
from evaluation.estimates.categorical import CategoricalReport
from evaluation.reports import read


def test_the_truth_of_a_sentence_follows_the_planted_defects():
    # Q-FIN-03-r5 states a net debt of 34,8 M€ where its source says 38,4 M€.
    figure = "La dette nette s'élève à 34,8 M€ au 31 décembre 2023 [^b31c0^]."
    assert truth(criterion="veracity", answer_id="Q-FIN-03-r5", sentence=figure) == 0
    assert truth(criterion="citation_support", answer_id="Q-FIN-03-r5", sentence=figure) == 0
    assert truth(criterion="veracity", answer_id="Q-FIN-03-r1", sentence=figure) == 1  # not planted there
    inference = "On peut en déduire qu'elle ne considère pas le responsable de site comme un successeur."
    assert (
        NOT_DEDUCIBLE["Q-RH-05-r3"]
        and truth(criterion="veracity", answer_id="Q-RH-05-r3", sentence=inference) == 0
    )
    # Its source is cited and says what it cites: the citation supports it.
    assert truth(criterion="citation_support", answer_id="Q-RH-05-r3", sentence=inference) == 1
    assert truth(criterion="veracity", answer_id="Q-IT-01-r3", sentence=OFF_TOPIC_PARAGRAPHS[0]) == 0
    assert truth(criterion="veracity", answer_id="Q-IT-01-r3", sentence="Voici la réponse.") == 1


@pytest.mark.django_db
def test_every_report_of_the_fresh_demo_has_human_labels_and_ppi_on_every_theme():
    call_command("load_demo", stdout=io.StringIO())
    missing = []
    for criterion in Criterion.objects.select_related("campaign").order_by("campaign_id", "name"):
        shown = read.read_report(read.report_request(criterion=criterion))
        reports = (
            [item.report for item in shown.report.estimates]
            if isinstance(shown.report, CategoricalReport)
            else [shown.report]
        )
        for report in reports:
            for group in [*report.themes, report.overall]:
                if not all(math.isfinite(x.mean) for x in (group.human, group.judge, group.ppi)):
                    missing.append((criterion.campaign.name, criterion.name, group.theme))
    assert missing == []
    # Veracity and citation support by people, at every stage, through the workflow.
    worked = Label.objects.filter(criterion__name__in=("veracity", "citation_support"))
    assert set(worked.values_list("stage", flat=True)) == {Stage.LABEL, Stage.REVIEW, Stage.ADJUDICATION}
    assert not worked.filter(user__isnull=True).exists()
    # Work is left for every role of the demo people: units to label, to review, to adjudicate.
    people = get_user_model().objects.in_bulk(
        ["annotator1", "annotator2", "adjudicator"], field_name="username"
    )
    criteria = list(
        Criterion.objects.select_related("campaign").filter(name__in=("veracity", "citation_support"))
    )
    for username, stage in (
        ("annotator1", Stage.LABEL),
        ("annotator2", Stage.REVIEW),
        ("adjudicator", Stage.ADJUDICATION),
    ):
        assert STAGE_ROLE[stage]
        counts = available_counts(
            user=people[username], criteria=criteria, stages=[stage], now=timezone.now()
        )
        assert len(counts) == len(criteria), (username, stage, counts)
