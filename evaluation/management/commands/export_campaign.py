"""python manage.py export_campaign --campaign NAME --format label-studio|argilla|parquet|ares
--output FILE [--criterion NAME] [--judge NAME] [--mapping FILE]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.ingest import ImportFailed
from annotation.models import Campaign
from evaluation import errors
from evaluation.estimates import params
from evaluation.estimates.report import compute_report
from evaluation.interchange import exporting
from evaluation.interchange.vocabulary import read_vocabulary
from evaluation.reports import judge_choice


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
            "campaign's only judge)",
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
            judge = None
            if options["judge"] or fmt in (exporting.ARGILLA, exporting.ARES):
                judge = judge_choice.default_judge(campaign=campaign, name=options["judge"])
            if fmt == exporting.PARQUET:
                count = exporting.write_parquet(campaign=campaign, criteria=criteria, sink=output)
            elif fmt == exporting.ARES:
                assert judge is not None
                report = compute_report(
                    criterion=criteria[0], judge=judge, alpha=options["alpha"], method=options["method"]
                )
                with open(output, "w", encoding="utf-8") as stream:
                    count = exporting.write_ares(report=report, stream=stream)
            else:
                with open(output, "w", encoding="utf-8") as stream:
                    if fmt == exporting.LABEL_STUDIO:
                        count = exporting.write_label_studio(
                            campaign=campaign,
                            criteria=criteria,
                            stream=stream,
                            vocabulary=vocabulary,
                            judges=None if judge is None else [judge],
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
