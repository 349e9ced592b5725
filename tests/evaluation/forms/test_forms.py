"""The forms of the evaluation pages: defaults, domain errors placed on their field, numbers
read unlocalised."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import QueryDict
from django.utils import translation

from annotation.models import Criterion
from evaluation import errors
from evaluation.estimates import judge_choice
from evaluation.estimates.params import check_alpha
from evaluation.forms.imports import ImportForm
from evaluation.forms.reports import CompareForm, RefreshForm, ReportForm
from evaluation.forms.runs import JudgeRunForm, ResumeForm
from evaluation.models import Judge
from tests.factories import make_campaign, make_judge


def query(**params) -> QueryDict:
    data = QueryDict(mutable=True)
    data.update(params)
    return data


@pytest.fixture
def criterion(campaign):
    return Criterion.objects.get(campaign=campaign, name="relevance")


@pytest.fixture
def judges(campaign, criterion):
    make_judge(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    make_judge(campaign=campaign, name="lexical", kind=Judge.Kind.LEXICAL)
    return judge_choice.candidates(criterion=criterion)


def test_report_form_defaults(criterion, judges):
    form = ReportForm(query(), criterion=criterion, judges=judges)
    assert form.is_valid(), form.errors
    params = form.params()
    assert (params.judge.name, params.method, params.alpha, params.target) == (
        "lexical",
        "robust",
        0.05,
        0.05,
    )
    assert params.no_judge == ""


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"alpha": "abc"}, "alpha: 'abc' is not a number"),
        ({"alpha": "0,05"}, "alpha: '0,05' is not a number"),
        ({"alpha": "1.5"}, "alpha: must be strictly between 0 and 1, got 1.5"),
        ({"method": "bayes"}, "method: 'bayes' is not one of robust, study"),
        ({"target": "0"}, "target: must be strictly between 0 and 1, got 0"),
        (
            {"judge": "nobody"},
            "judge: 'nobody' has no successful judgment of 'relevance' (judges that have: imported, lexical)",
        ),
    ],
)
def test_report_form_names_the_field_and_keeps_the_default(data, message, criterion, judges):
    form = ReportForm(query(**data), criterion=criterion, judges=judges)
    assert not form.is_valid()
    assert form.messages() == [message]
    params = form.params()
    assert params.method == "robust" and params.alpha == 0.05 and params.target == 0.05


def test_report_form_reads_numbers_with_a_decimal_point_whatever_the_language(criterion, judges):
    with translation.override("fr"):
        form = ReportForm(
            query(alpha="0.1", target="0.025", method="study", judge="imported"),
            criterion=criterion,
            judges=judges,
        )
        assert form.is_valid(), form.errors
    params = form.params()
    assert (params.judge.name, params.method, params.alpha, params.target) == (
        "imported",
        "study",
        0.1,
        0.025,
    )


def test_report_form_without_a_judge_to_pick_says_why_without_an_error(campaign, criterion, judges):
    make_judge(campaign=campaign, name="gpt")
    several = ReportForm(query(), criterion=criterion, judges=judge_choice.candidates(criterion=criterion))
    assert several.is_valid() and several.params().judge is None and several.params().request is None
    assert several.params().no_judge == (
        "several judges have labeled 'relevance': choose one (gpt, imported, lexical), or make one its "
        "primary judge"
    )
    none = ReportForm(query(), criterion=criterion, judges=[])
    assert none.is_valid()
    assert none.params().no_judge == "no judge has labeled 'relevance' successfully yet"


def test_domain_errors_carry_their_field(db):
    with pytest.raises(errors.EstimateError) as caught:
        check_alpha(2.0)
    assert caught.value.field == "alpha" and caught.value.message == "must be strictly between 0 and 1, got 2"
    assert str(caught.value) == "alpha: must be strictly between 0 and 1, got 2"
    with pytest.raises(errors.EstimateError) as caught:
        judge_choice.choose_judge(criterion=Criterion(name="relevance"), judges=[], name="gpt")
    assert caught.value.field == "judge"


def test_compare_form_places_errors_on_the_other_campaigns_fields(campaign, judges):
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    other = make_campaign(name="Velmont v2")
    mine = [other]
    unknown = CompareForm(query(other="nope"), judges=judges, candidates=mine, criterion=criterion)
    assert not unknown.is_valid()
    assert unknown.messages() == ["other: 'nope' is not a campaign you manage or analyse"]
    bad_judge = CompareForm(
        query(other=other.slug, other_judge="x"), judges=judges, candidates=mine, criterion=criterion
    )
    assert not bad_judge.is_valid()
    assert bad_judge.messages() == [
        "other_judge: 'x' has no successful judgment of 'relevance' (judges that have: none)"
    ]
    no_judge = CompareForm(query(other=other.slug), judges=judges, candidates=mine, criterion=criterion)
    assert not no_judge.is_valid()
    assert no_judge.messages() == ["other: no judge has labeled 'relevance' successfully yet"]
    make_judge(campaign=other, name="imported", kind=Judge.Kind.IMPORTED)
    good = CompareForm(query(other=other.slug), judges=judges, candidates=mine, criterion=criterion)
    assert good.is_valid(), good.errors
    assert good.other_campaign == other and good.cleaned_data["other_judge"].name == "imported"
    assert good.other_criterion == Criterion.objects.get(campaign=other, name="relevance")
    alone = CompareForm(query(), judges=judges, candidates=mine, criterion=criterion)
    assert alone.is_valid() and alone.other_campaign is None


def test_refresh_form_passes_the_parameters_on():
    form = RefreshForm(query(judge="gpt 4", method="study", alpha="0.05", back="report"))
    assert form.is_valid()
    assert form.query() == "?judge=gpt+4&method=study&alpha=0.05" and form.cleaned_data["back"] == "report"
    empty = RefreshForm(query())
    assert empty.is_valid() and empty.query() == ""
    assert not RefreshForm(query(back="elsewhere")).is_valid()


def test_judge_run_form_checks_every_field(campaign):
    form = JudgeRunForm(
        query(criterion="nope", judge="", concurrency="x", token_budget="0"), campaign=campaign
    )
    assert not form.is_valid()
    assert form.messages() == [
        "criterion: choose one of the campaign's criteria",
        "judge: give a name ('lexical' is the offline judge)",
        "concurrency: 'x' is not a whole number",
        "token_budget: must be at least 1",
    ]
    good = JudgeRunForm(query(criterion="veracity", judge=" lexical "), campaign=campaign)
    assert good.is_valid(), good.errors
    data = good.cleaned_data
    assert data["criterion"].name == "veracity" and data["judge"] == "lexical" and data["scope"] == "all"
    assert data["concurrency"] is None and data["token_budget"] is None
    # The criterion is the campaign's own, never another campaign's of the same name.
    other = make_campaign(name="Other")
    theirs = JudgeRunForm(query(criterion="veracity", judge="x"), campaign=other)
    assert theirs.is_valid() and theirs.cleaned_data["criterion"].campaign == other
    assert not JudgeRunForm(
        query(criterion="veracity", judge="x", scope="some"), campaign=campaign
    ).is_valid()


def test_resume_form_reads_an_optional_budget():
    assert ResumeForm(query()).is_valid()
    form = ResumeForm(query(token_budget="5000"))
    assert form.is_valid() and form.cleaned_data["token_budget"] == 5000
    assert ResumeForm(query(token_budget="lots")).messages() == ["token_budget: 'lots' is not a whole number"]


def test_import_form_needs_a_name_a_file_and_a_free_name(campaign, settings):
    upload = SimpleUploadedFile("answers.jsonl", b"{}\n")
    missing = ImportForm(query(campaign=" "), {}, campaign=None, may_manage=lambda c: True)
    assert not missing.is_valid()
    assert [(e.file, e.field) for e in missing.row_errors()] == [("upload", "campaign"), ("upload", "file")]
    taken = ImportForm(
        query(campaign=campaign.name), {"file": upload}, campaign=None, may_manage=lambda c: False
    )
    assert not taken.is_valid()
    assert [(e.file, e.field) for e in taken.row_errors()] == [("answers.jsonl", "campaign")]
    settings.IMPORT_MAX_BYTES = 2
    big = ImportForm(
        query(), {"file": SimpleUploadedFile("a.jsonl", b"{}\n")}, campaign=campaign, may_manage=None
    )
    assert not big.is_valid()
    assert [e.message for e in big.row_errors()] == [
        "3 bytes is more than the limit of 2 bytes (IMPORT_MAX_BYTES)"
    ]
    settings.IMPORT_MAX_BYTES = 1024
    into = ImportForm(query(update="on"), {"file": upload}, campaign=campaign, may_manage=None)
    assert into.is_valid(), into.errors
    assert into.cleaned_data["campaign"] == campaign.name and into.cleaned_data["update"] is True
