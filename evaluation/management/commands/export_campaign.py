"""python manage.py export_campaign --campaign NAME --format label-studio|argilla|parquet|ares
--output FILE [--criterion NAME] [--judge NAME] [--mapping FILE]"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.ingest import ImportFailed
from annotation.models import Campaign, Criterion
from evaluation import errors
from evaluation.estimates import judge_choice, params
from evaluation.estimates.categorical import CategoricalReport
from evaluation.interchange import authors, exporting
from evaluation.interchange.vocabulary import read_vocabulary
from evaluation.models import Judge
from evaluation.reports import read


class Command(BaseCommand):
    help = (
        "Export a campaign's units, labels and judgments for Label Studio or Argilla, its units with "
        "labels as Parquet, or a criterion's estimates with ARES's result keys (see docs/interchange.md)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--format", required=True, choices=exporting.FORMATS)
        parser.add_argument("--output", required=True, help="file to write")
        parser.add_argument("--criterion", help="one criterion (default: all; required for ares)")
        parser.add_argument(
            "--judge",
            help="judge whose labels go out (label-studio: default all; argilla and ares: default the "
            "criterion's primary judge, else its only judge)",
        )
        parser.add_argument("--mapping", help="JSON file: the choice names and question names to write")
        parser.add_argument("--alpha", type=float, default=0.05, help="ares: 1 - confidence level")
        parser.add_argument("--method", default="robust", choices=params.METHODS, help="ares: estimator")

    def handle(self, *args, **options) -> None:
        fmt, output = options["format"], options["output"]
        campaign = Campaign.objects.filter(name=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"campaign {options['campaign']!r} does not exist")
        if fmt == exporting.ARES and not options["criterion"]:
            raise CommandError("--format ares needs --criterion")
        try:
            vocabulary = read_vocabulary(path=options["mapping"])
            criteria = exporting.pick_criteria(campaign=campaign, name=options["criterion"])
            if fmt == exporting.ARES:
                request = read.report_request(
                    criterion=criteria[0],
                    judge=options["judge"] or "",
                    method=options["method"],
                    alpha=options["alpha"],
                )
                shown = read.read_report(request)
                if isinstance(shown.report, CategoricalReport):
                    raise CommandError(
                        f"{criteria[0].name!r} has categories: ARES's keys hold one rate per theme"
                    )
                with exporting.whole_file(output) as part, open(part, "w", encoding="utf-8") as stream:
                    count = exporting.write_ares(report=shown.report, stream=stream)
            elif fmt == exporting.PARQUET:
                with exporting.whole_file(output) as part:
                    count = exporting.write_parquet(campaign=campaign, criteria=criteria, sink=str(part))
            else:
                judge = _judge(campaign=campaign, criteria=criteria, name=options["judge"], fmt=fmt)
                with exporting.whole_file(output) as part, open(part, "w", encoding="utf-8") as stream:
                    if fmt == exporting.LABEL_STUDIO:
                        people: list[dict] = []
                        count = exporting.write_label_studio(
                            campaign=campaign,
                            criteria=criteria,
                            stream=stream,
                            vocabulary=vocabulary,
                            judges=None if judge is None else [judge],
                            people=people,
                        )
                    else:
                        count = exporting.write_argilla(
                            campaign=campaign,
                            criteria=criteria,
                            stream=stream,
                            vocabulary=vocabulary,
                            judge=judge,
                        )
        except (exporting.ExportError, errors.EstimateError, ImportFailed) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"wrote {output}: {count} {'rows' if fmt == exporting.PARQUET else 'items'}")
        if fmt == exporting.LABEL_STUDIO:
            companion = people_path(output)
            with (
                exporting.whole_file(companion) as part,
                open(part, "w", encoding="utf-8", newline="") as stream,
            ):
                exporting.write_people_csv(people, stream)
            placeholders = sum(person["placeholder"] for person in people)
            self.stdout.write(
                f"wrote {companion}: {len(people)} people the annotations name by email; "
                f"{placeholders} placeholder{'s' if placeholders != 1 else ''} "
                f"(@{authors.PLACEHOLDER_DOMAIN}) to create as users in Label Studio before importing"
            )


def people_path(output: str) -> Path:
    """The companion of a Label Studio export: ``tasks.json`` -> ``tasks.people.csv``."""
    path = Path(output)
    return path.with_name(f"{path.stem if path.suffix == '.json' else path.name}.people.csv")


def _judge(*, campaign: Campaign, criteria: list[Criterion], name: str | None, fmt: str) -> Judge | None:
    """The judge whose labels go out: the one named; for Argilla without a name, the default
    judge of every criterion exported (``judge_choice``) when they agree, none when no criterion
    has one (records without suggestions); Label Studio without a name: every judge (None)."""
    if name:
        judge = Judge.objects.filter(campaign=campaign, name=name).first()
        if judge is None:
            raise CommandError(f"judge {name!r} does not exist in {campaign.name!r}")
        return judge
    if fmt != exporting.ARGILLA:
        return None
    defaults = {judge for criterion in criteria if (judge := judge_choice.choose_judge(criterion=criterion))}
    if len(defaults) > 1:
        names = ", ".join(sorted(judge.name for judge in defaults))
        raise CommandError(
            f"the criteria exported have different default judges ({names}): name one with --judge"
        )
    return defaults.pop() if defaults else None
