"""python manage.py draw_sample: json and table output, top-ups, errors naming the option."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import translation

from annotation.models import Criterion, Sample, SampleItem
from annotation.sampling.reading import cluster_summary, sample_as_json
from tests.factories import make_corpus

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus(campaign):
    make_corpus(campaign=campaign)
    return campaign


def run(*args: str) -> str:
    out = StringIO()
    call_command("draw_sample", *args, stdout=out)
    return out.getvalue()


def counts() -> tuple[int, int]:
    return Sample.objects.count(), SampleItem.objects.count()


def test_json_output_is_the_stored_sample_as_json(corpus):
    output = run(
        "--campaign",
        corpus.name,
        "--criterion",
        "veracity",
        "--budget",
        "30",
        "--seed",
        "7",
        "--format",
        "json",
    )
    sample = Sample.objects.get()
    assert json.loads(output) == sample_as_json(sample=sample)
    assert (sample.seed, sample.budget, sample.per_cluster, sample.status) == (7, 30, 3, "done")


def test_table_output_lists_k_drawn_and_cluster_sizes_per_theme(corpus):
    output = run("--campaign", corpus.name, "--criterion", "veracity", "--budget", "30", "--per-cluster", "2")
    sample = Sample.objects.get()
    lines = output.splitlines()
    assert lines[0].startswith(f"sample {sample.pk} for veracity: {sample.items.count()} units drawn")
    assert "2 per cluster" in lines[0]
    assert lines[1].split()[:4] == ["theme", "K", "units", "drawn"]
    for theme, line in zip(cluster_summary(sample=sample), lines[2:], strict=True):
        fields = line.split()
        sizes = [str(row["size"]) for row in theme["cluster_rows"]]
        assert fields == [theme["theme"], str(theme["k"]), str(theme["units"]), str(theme["drawn"]), *sizes]


def test_per_theme_budgets_are_parsed_and_applied(corpus):
    run("--campaign", corpus.name, "--criterion", "veracity", "--budget", "45", "--per-theme", "IT=12, RH=9")
    sample = Sample.objects.get()
    assert sample.k_per_theme["IT"] == 4
    assert sample.k_per_theme["RH"] == 3
    assert sample.k_per_theme["Finance"] == 8


def test_top_up_keeps_the_sample_and_adds_units(corpus):
    run("--campaign", corpus.name, "--criterion", "veracity", "--budget", "24", "--seed", "4")
    sample = Sample.objects.get()
    before = set(sample.items.values_list("unit_id", flat=True))
    output = run(
        "--campaign",
        corpus.name,
        "--criterion",
        "veracity",
        "--top-up",
        str(sample.pk),
        "--budget",
        "48",
        "--format",
        "json",
    )
    assert Sample.objects.count() == 1
    data = json.loads(output)
    assert data["sample"] == sample.pk
    after = set(sample.items.values_list("unit_id", flat=True))
    assert before < after
    assert len(data["items"]) == len(after)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--campaign", "Nope", "--criterion", "veracity", "--budget", "30"], "--campaign: 'Nope'"),
        (["--criterion", "nope", "--budget", "30"], "--criterion: 'nope'"),
        (["--criterion", "veracity"], "--budget: required"),
        (["--criterion", "veracity", "--budget", "2"], "--budget: 2 is below per_cluster"),
        (
            ["--criterion", "veracity", "--budget", "30", "--per-cluster", "0"],
            "--per-cluster: must be at least 1",
        ),
        (["--criterion", "veracity", "--budget", "30", "--per-theme", "Juridique=6"], "--per-theme: unknown"),
        (["--criterion", "veracity", "--budget", "30", "--per-theme", "IT"], "--per-theme: 'IT' is not"),
        (["--criterion", "veracity", "--budget", "30", "--per-theme", "IT=x"], "--per-theme: 'x' for 'IT'"),
        (["--criterion", "veracity", "--budget", "30", "--seed", "-4"], "--seed: must be between"),
        (
            ["--criterion", "veracity", "--top-up", "999", "--budget", "60"],
            "--top-up: sample 999 does not exist",
        ),
    ],
)
def test_errors_name_the_option_and_write_nothing(corpus, args, message):
    if "--campaign" not in args:
        args = ["--campaign", corpus.name, *args]
    with pytest.raises(CommandError) as raised:
        run(*args)
    assert str(raised.value).startswith(message)
    assert counts() == (0, 0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budget", "12"], "--budget: 12 is below the sample's 24"),
        (["--per-cluster", "2"], "--per-cluster: 2 is below the sample's 3"),
        ([], "--budget: give a budget above 24"),
        (["--budget", "48", "--seed", "5"], "--seed: a top-up keeps the sample's seed (4)"),
    ],
)
def test_top_up_errors_name_the_option_and_change_nothing(corpus, args, message):
    run("--campaign", corpus.name, "--criterion", "veracity", "--budget", "24", "--seed", "4")
    sample = Sample.objects.get()
    before = list(sample.items.values_list("unit_id", "cluster", "cluster_size", "inclusion_probability"))
    with pytest.raises(CommandError) as raised:
        run("--campaign", corpus.name, "--criterion", "veracity", "--top-up", str(sample.pk), *args)
    assert str(raised.value).startswith(message)
    after = list(sample.items.values_list("unit_id", "cluster", "cluster_size", "inclusion_probability"))
    assert after == before


def test_top_up_of_another_criterions_sample_is_refused(corpus):
    run("--campaign", corpus.name, "--criterion", "veracity", "--budget", "24")
    sample = Sample.objects.get()
    assert Criterion.objects.filter(campaign=corpus, name="relevance").exists()
    with pytest.raises(CommandError, match="--top-up: sample .* does not exist for 'relevance'"):
        run(
            "--campaign",
            corpus.name,
            "--criterion",
            "relevance",
            "--top-up",
            str(sample.pk),
            "--budget",
            "48",
        )


def test_the_command_line_keeps_its_refusals_in_english_whatever_language_is_active(corpus):
    with translation.override("fr"), pytest.raises(CommandError) as raised:
        run("--campaign", corpus.name, "--criterion", "veracity", "--budget", "2")
    assert str(raised.value).startswith("--budget: 2 is below per_cluster = 3, not enough for one cluster")
    assert counts() == (0, 0)


def _judged(campaign, *, confidence: bool = True, pilot: int = 20):
    """An imported judge on every unit of veracity, and a pilot of ``pilot`` final human labels
    (the judge right on three units in four) that its confidence is recalibrated on."""
    from annotation.models import Label, Stage
    from evaluation.models import Judge, Judgment

    criterion = Criterion.objects.get(campaign=campaign, name="veracity")
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.IMPORTED)
    for index, unit in enumerate(criterion.campaign.units.filter(level=criterion.level).order_by("id")):
        Judgment.objects.create(
            unit=unit,
            criterion=criterion,
            judge=judge,
            value=index % 2,
            confidence=(0.55 + (index % 5) / 10) if confidence else None,
        )
        if index < pilot:
            value = index % 2 if index % 4 else 1 - index % 2
            Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=value)
    return judge


def test_design_confidence_draws_by_the_judges_confidence(corpus):
    _judged(corpus)
    output = run(
        "--campaign", corpus.name, "--criterion", "veracity", "--budget", "12", "--seed", "3",
        "--design", "confidence", "--judge", "gpt",
    )  # fmt: skip
    sample = Sample.objects.get()
    assert sample.design == "confidence" and sample.budget == 12
    assert "drawn by the confidence of judge gpt" in output
    assert SampleItem.objects.filter(sample=sample).exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "--judge: --design confidence needs the judge"),
        (["--judge", "nobody"], "--judge: 'nobody' is not a judge"),
        (["--judge", "gpt", "--per-cluster", "2"], "--per-cluster: not an option of --design confidence"),
    ],
)
def test_design_confidence_refusals_name_the_option(corpus, extra, message):
    _judged(corpus)
    with pytest.raises(CommandError, match=message):
        run(
            "--campaign",
            corpus.name,
            "--criterion",
            "veracity",
            "--budget",
            "12",
            "--design",
            "confidence",
            *extra,
        )
    assert counts() == (0, 0)


def test_design_confidence_refuses_a_judge_without_confidence(corpus):
    _judged(corpus, confidence=False)
    with pytest.raises(CommandError, match="^--judge: 'gpt' gave no confidence on 'veracity'"):
        run(
            "--campaign", corpus.name, "--criterion", "veracity", "--budget", "12",
            "--design", "confidence", "--judge", "gpt",
        )  # fmt: skip
    assert counts() == (0, 0)


def test_a_judge_without_design_confidence_is_refused(corpus):
    _judged(corpus)
    with pytest.raises(CommandError, match="--judge: only --design confidence"):
        run("--campaign", corpus.name, "--criterion", "veracity", "--budget", "12", "--judge", "gpt")
    with pytest.raises(CommandError, match="--objective: only --design confidence"):
        run("--campaign", corpus.name, "--criterion", "veracity", "--budget", "12", "--objective", "overall")


def test_design_confidence_with_an_objective_draws_the_split(corpus):
    from evaluation.designs.budget_split import plan_split

    judge = _judged(corpus)
    run(
        "--campaign", corpus.name, "--criterion", "veracity", "--budget", "20", "--seed", "3",
        "--design", "confidence", "--judge", "gpt", "--objective", "largest-theme",
    )  # fmt: skip
    sample = Sample.objects.get()
    criterion = Criterion.objects.get(campaign=corpus, name="veracity")
    plan = plan_split(criterion=criterion, judge=judge, budget=20, objective="largest-theme")
    assert {t: v["budget"] for t, v in sample.design_parameters["themes"].items()} == plan.per_theme
    with pytest.raises(CommandError, match="--objective: the split sets every theme's budget"):
        run(
            "--campaign", corpus.name, "--criterion", "veracity", "--budget", "20",
            "--design", "confidence", "--judge", "gpt", "--objective", "overall", "--per-theme", "Finance=5",
        )  # fmt: skip


def test_by_verdict_draws_each_stratum_s_share_and_needs_an_objective(corpus):
    from evaluation.designs.budget_split import plan_split

    judge = _judged(corpus)
    with pytest.raises(CommandError, match="--by-verdict: only --design confidence with --objective"):
        run(
            "--campaign", corpus.name, "--criterion", "veracity", "--budget", "20",
            "--design", "confidence", "--judge", "gpt", "--by-verdict",
        )  # fmt: skip
    assert not Sample.objects.exists()
    run(
        "--campaign", corpus.name, "--criterion", "veracity", "--budget", "20", "--seed", "3",
        "--design", "confidence", "--judge", "gpt", "--objective", "overall", "--by-verdict",
    )  # fmt: skip
    sample = Sample.objects.get()
    criterion = Criterion.objects.get(campaign=corpus, name="veracity")
    plan = plan_split(criterion=criterion, judge=judge, budget=20, objective="overall", by_verdict=True)
    recorded = {
        theme: {key: shape["budget"] for key, shape in value["strata"].items()}
        for theme, value in sample.design_parameters["themes"].items()
    }
    assert recorded == plan.per_stratum
