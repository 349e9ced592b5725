"""python manage.py compare --campaign A --other B [--other C ...] --criterion NAME --format json|table
[--adjust holm|bonferroni]"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser, no_translations

from annotation.models import Campaign
from evaluation import errors
from evaluation.measures import comparison
from evaluation.reports import measure_tables
from inference.paired import ADJUSTMENTS, HOLM

FORMATS = ("json", "table")


class Command(BaseCommand):
    help = (
        "Versions of the assistant (campaigns sharing question ids) compared by question: every pair's "
        "difference per theme and overall (human-only, judge-only, PPI++, automatic metrics), adjusted "
        "for the pairs compared (Holm, or --adjust bonferroni)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--other", action="append", required=True, help="another campaign (repeatable)")
        parser.add_argument("--criterion", required=True)
        parser.add_argument("--format", default="table", choices=FORMATS)
        parser.add_argument(
            "--judge", help="judge name in every campaign (default: each campaign's only judge)"
        )
        parser.add_argument("--alpha", default="0.05", help="1 - confidence level (default 0.05)")
        parser.add_argument("--method", default="robust", help="robust (default) or study")
        parser.add_argument(
            "--adjust",
            default=HOLM,
            help=f"how the pairs' p-values are adjusted: {' or '.join(ADJUSTMENTS)} (default holm)",
        )

    @no_translations  # refusals in English, whatever the settings' language
    def handle(self, *args, **options) -> None:
        fmt = options["format"]
        try:
            alpha = float(options["alpha"])
        except ValueError:
            raise CommandError(f"--alpha must be a number, got {options['alpha']!r}") from None
        campaigns = []
        for option, name in [
            ("--campaign", options["campaign"]),
            *(("--other", n) for n in options["other"]),
        ]:
            found = Campaign.objects.filter(name=name).first()
            if found is None:
                raise CommandError(f"{option}: campaign {name!r} does not exist")
            campaigns.append(found)
        try:
            versions = comparison.versions_for(
                campaigns=campaigns, criterion=options["criterion"], judge_name=options["judge"] or ""
            )
            result = comparison.compare_versions(
                versions=versions, alpha=alpha, method=options["method"], adjustment=options["adjust"]
            )
        except errors.EstimateError as exc:
            raise CommandError(f"--{exc.field}: {exc.reason}" if exc.field else str(exc)) from None
        if fmt == "json":
            text = json.dumps(comparison.comparison_as_json(comparison=result), indent=2, ensure_ascii=False)
        else:
            text = measure_tables.comparison_table(comparison=result)
        self.stdout.write(text)
