"""python manage.py draw_sample --campaign NAME --criterion veracity --budget 140 --seed 7 [...]

Two designs: ``--design kmeans`` (the study's, the default) and ``--design confidence`` (by the
judge's confidence, ``--judge``; ``--objective`` splits the budget across themes, and
``--by-verdict`` across each theme's verdicts too). The command lives in ``evaluation``
because the second reads judgments, which the annotators' side never does.
"""

from __future__ import annotations

import json
import re
import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser, no_translations

from annotation.models import Campaign, Criterion, Sample
from annotation.sampling.draws import draw_sample, top_up_sample
from annotation.sampling.embeddings import BACKENDS, EmbeddingError
from annotation.sampling.reading import cluster_summary, sample_as_json
from evaluation.designs.active import draw_confidence_sample
from evaluation.designs.budget_split import draw_by_plan
from evaluation.models import Judge
from inference.designs.allocation import OBJECTIVES

# Domain errors name keyword arguments; people typed options.
OPTION_OF_FIELD = {
    "budget": "--budget",
    "per_cluster": "--per-cluster",
    "per_theme_budget": "--per-theme",
    "seed": "--seed",
    "backend": "--backend",
    "criterion": "--criterion",
    "sample": "--top-up",
    "judge": "--judge",
    "design": "--design",
    "objective": "--objective",
}
KMEANS, CONFIDENCE = Sample.Design.KMEANS.value, Sample.Design.CONFIDENCE.value
_FIELD = re.compile(r"^([a-z_]+)(\[[^\]]*\])?:")


def parse_per_theme(raw: str) -> dict[str, int]:
    """``"Finance=30,RH=30"`` as ``{"Finance": 30, "RH": 30}``; CommandError naming --per-theme."""
    budgets: dict[str, int] = {}
    for part in raw.split(","):
        if not part.strip():
            continue
        theme, sep, value = part.rpartition("=")
        theme = theme.strip()
        if not sep or not theme:
            raise CommandError(f"--per-theme: {part.strip()!r} is not THEME=BUDGET")
        try:
            budgets[theme] = int(value)
        except ValueError:
            raise CommandError(
                f"--per-theme: {value.strip()!r} for {theme!r} is not a whole number"
            ) from None
    if not budgets:
        raise CommandError("--per-theme: give THEME=BUDGET pairs separated by commas")
    return budgets


def _command_error(exc: ValueError) -> CommandError:
    message = str(exc)
    match = _FIELD.match(message)
    if match and match.group(1) in OPTION_OF_FIELD:
        message = OPTION_OF_FIELD[match.group(1)] + message[len(match.group(1)) :]
    return CommandError(message)


class Command(BaseCommand):
    help = (
        "Draw (or top up) a sample of one criterion's units for human annotation: stratified K-means "
        "(default) or by the judge's confidence."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True, help="campaign name")
        parser.add_argument("--criterion", required=True, help="criterion name, e.g. veracity")
        parser.add_argument("--budget", type=int, help="total human labels (required for a new sample)")
        parser.add_argument("--seed", type=int, help="random seed of a new sample (default 0)")
        parser.add_argument("--per-cluster", type=int, help="units drawn per cluster (default 3)")
        parser.add_argument("--per-theme", help="budgets of some themes: Finance=30,RH=30")
        parser.add_argument("--backend", choices=BACKENDS, help="embeddings (default EMBEDDING_BACKEND)")
        parser.add_argument("--top-up", type=int, metavar="SAMPLE_ID", help="enlarge this sample instead")
        parser.add_argument("--format", choices=["table", "json"], default="table")
        parser.add_argument(
            "--design",
            choices=[KMEANS, CONFIDENCE],
            default=KMEANS,
            help="kmeans (the study's, default) or confidence (the judge's uncertainty raises a unit's "
            "chance of being drawn)",
        )
        parser.add_argument("--judge", help="the judge whose confidence drives --design confidence")
        parser.add_argument(
            "--objective",
            choices=OBJECTIVES,
            help="--design confidence: split the budget across themes to minimise the overall "
            "half-width or the largest per-theme one (default: in proportion to the themes' sizes)",
        )
        parser.add_argument(
            "--by-verdict",
            action="store_true",
            help="--design confidence with --objective: split each theme by the judge's verdict too, "
            "where the pilot's labels saw it err (works with a judge that gives no confidence)",
        )

        parser.add_argument(
            "--without-pilot",
            action="store_true",
            help="--design confidence: draw on the judge's confidence as it gave it, when fewer than "
            "20 human labels of the criterion could recalibrate it (refused otherwise)",
        )

    @no_translations  # refusals and notes in English, whatever the settings' language
    def handle(self, *args, **options) -> None:
        try:
            campaign = Campaign.objects.get(name=options["campaign"])
        except Campaign.DoesNotExist:
            raise CommandError(f"--campaign: {options['campaign']!r} does not exist") from None
        try:
            criterion = Criterion.objects.get(campaign=campaign, name=options["criterion"])
        except Criterion.DoesNotExist:
            raise CommandError(
                f"--criterion: {options['criterion']!r} does not exist in {campaign.name!r}"
            ) from None
        per_theme = parse_per_theme(options["per_theme"]) if options["per_theme"] else None
        show = sys.stderr.isatty() or options["verbosity"] > 1
        progress = _show_fraction if show else None
        if options["without_pilot"] and options["design"] != CONFIDENCE:
            raise CommandError("--without-pilot: only --design confidence takes it")
        if options["by_verdict"] and not (options["design"] == CONFIDENCE and options["objective"]):
            raise CommandError("--by-verdict: only --design confidence with --objective takes it")
        if options["design"] == CONFIDENCE:
            if options["objective"] and per_theme:
                raise CommandError("--objective: the split sets every theme's budget; drop --per-theme")
            for option in ("top_up", "per_cluster", "backend"):
                if options[option] is not None:
                    flag = "--" + option.replace("_", "-")
                    raise CommandError(f"{flag}: not an option of --design confidence")
        elif options["judge"] or options["objective"]:
            flag = "--judge" if options["judge"] else "--objective"
            raise CommandError(f"{flag}: only --design confidence takes it")
        try:
            if options["design"] == CONFIDENCE:
                if options["budget"] is None:
                    raise CommandError("--budget: required to draw a new sample")
                judge = self._judge(campaign=campaign, name=options["judge"])
                seed = 0 if options["seed"] is None else options["seed"]
                if options["objective"]:
                    sample = draw_by_plan(
                        criterion=criterion,
                        judge=judge,
                        budget=options["budget"],
                        objective=options["objective"],
                        by_verdict=options["by_verdict"],
                        seed=seed,
                        without_pilot=options["without_pilot"],
                    )
                else:
                    sample = draw_confidence_sample(
                        criterion=criterion,
                        judge=judge,
                        budget=options["budget"],
                        seed=seed,
                        per_theme_budget=per_theme,
                        without_pilot=options["without_pilot"],
                    )
            elif options["top_up"] is not None:
                sample = self._top_up(
                    options=options, criterion=criterion, per_theme=per_theme, progress=progress
                )
            else:
                if options["budget"] is None:
                    raise CommandError("--budget: required to draw a new sample")
                sample = draw_sample(
                    criterion=criterion,
                    budget=options["budget"],
                    seed=0 if options["seed"] is None else options["seed"],
                    per_cluster=3 if options["per_cluster"] is None else options["per_cluster"],
                    per_theme_budget=per_theme,
                    backend=options["backend"],
                    progress=progress,
                )
        except ValueError as exc:
            raise _command_error(exc) from None
        except EmbeddingError as exc:
            raise CommandError(f"embeddings: {exc}") from None
        if show:
            sys.stderr.write("\n")
        if options["format"] == "json":
            self.stdout.write(json.dumps(sample_as_json(sample=sample), ensure_ascii=False, indent=2))
        else:
            self._table(sample)

    def _judge(self, *, campaign: Campaign, name: str | None) -> Judge:
        if not name:
            raise CommandError("--judge: --design confidence needs the judge whose confidence it follows")
        try:
            return Judge.objects.get(campaign=campaign, name=name)
        except Judge.DoesNotExist:
            raise CommandError(f"--judge: {name!r} is not a judge of {campaign.name!r}") from None

    def _top_up(self, *, options: dict, criterion: Criterion, per_theme, progress) -> Sample:
        try:
            sample = Sample.objects.select_related("criterion").get(pk=options["top_up"], criterion=criterion)
        except Sample.DoesNotExist:
            raise CommandError(
                f"--top-up: sample {options['top_up']} does not exist for {criterion.name!r} "
                f"in {criterion.campaign.name!r}"
            ) from None
        if options["seed"] is not None and options["seed"] != sample.seed:
            raise CommandError(f"--seed: a top-up keeps the sample's seed ({sample.seed})")
        if options["backend"] and options["backend"] != sample.embedding_backend:
            raise CommandError(f"--backend: a top-up keeps the sample's backend ({sample.embedding_backend})")
        return top_up_sample(
            sample=sample,
            budget=options["budget"],
            per_cluster=options["per_cluster"],
            per_theme_budget=per_theme,
            progress=progress,
        )

    def _table(self, sample: Sample) -> None:
        summary = cluster_summary(sample=sample, examples=0)
        drawn = sum(theme["drawn"] for theme in summary)
        if sample.design == CONFIDENCE:
            self.stdout.write(
                f"sample {sample.pk} for {sample.criterion.name}: {drawn} units drawn by the confidence "
                f"of judge {sample.design_parameters.get('judge')} "
                f"(expected {sample.budget}, seed {sample.seed})"
            )
            width = max([len("theme"), *(len(theme["theme"]) for theme in summary)])
            self.stdout.write(f"{'theme':<{width}}  {'units':>7}  {'drawn':>5}")
            for theme in summary:
                self.stdout.write(f"{theme['theme']:<{width}}  {theme['units']:>7}  {theme['drawn']:>5}")
            return
        self.stdout.write(
            f"sample {sample.pk} for {sample.criterion.name}: {drawn} units drawn "
            f"(budget {sample.budget}, {sample.per_cluster} per cluster, seed {sample.seed}, "
            f"{sample.embedding_backend} embeddings)"
        )
        width = max([len("theme"), *(len(theme["theme"]) for theme in summary)])
        self.stdout.write(f"{'theme':<{width}}  {'K':>4}  {'units':>7}  {'drawn':>5}  cluster sizes")
        for theme in summary:
            sizes = " ".join(str(row["size"]) for row in theme["cluster_rows"])
            name, k, units, count = theme["theme"], theme["k"], theme["units"], theme["drawn"]
            self.stdout.write(f"{name:<{width}}  {k:>4}  {units:>7}  {count:>5}  {sizes}")


def _show_fraction(fraction: float) -> None:
    sys.stderr.write(f"\r{fraction:6.1%}")
