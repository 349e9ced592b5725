"""python manage.py report --campaign NAME --criterion relevance --format json|table|xlsx|csv [--shrinkage]
[--clusters answer|question] [--combine JUDGE,JUDGE]"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser, no_translations

from evaluation.errors import EstimateError
from evaluation.estimates.params import METHODS
from evaluation.reports import files, read
from evaluation.reports.lookups import find_campaign, find_criterion

FORMATS = ("json", "table", "xlsx", "csv")


class Command(BaseCommand):
    help = (
        "Per-theme and overall estimates (human-only, judge-only, PPI++) for one criterion; per "
        "category and group, with the confusion matrices, for a criterion with categories. The "
        "numbers the report page shows: the latest snapshot of these parameters, or computed now."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--criterion", required=True)
        parser.add_argument("--format", default="table", choices=FORMATS)
        parser.add_argument("--output", help="file to write (required for xlsx and csv)")
        parser.add_argument(
            "--judge", help="judge name (default: the criterion's primary judge, else its only judge)"
        )
        parser.add_argument("--alpha", default="0.05", help="1 - confidence level (default 0.05)")
        parser.add_argument("--method", default="robust", help=f"{' or '.join(METHODS)} (default robust)")
        parser.add_argument("--by-difficulty", action="store_true", help="add theme x difficulty rows")
        parser.add_argument(
            "--clusters",
            default="answer",
            help="robust method: answer (default: intervals about this campaign's answers) or question "
            "(about the assistant asked these questions again; docs/statistics.md)",
        )
        parser.add_argument(
            "--combine",
            default="",
            help="judges to combine in one estimate beside the report, comma-separated (PPI++ with a "
            "coefficient per judge; robust method, binary criteria; docs/statistics.md)",
        )
        parser.add_argument(
            "--shrinkage",
            action="store_true",
            help="add each theme's PPI++ estimate shrunk toward the judge (PAS; 95%% on average over "
            "the themes, not per theme; binary criteria, at least 2 themes)",
        )

    @no_translations  # refusals and notes in English, whatever the settings' language
    def handle(self, *args, **options) -> None:
        fmt = options["format"]
        if fmt in ("xlsx", "csv") and not options["output"]:
            raise CommandError(f"--format {fmt} needs --output FILE")
        try:
            alpha = float(options["alpha"])
        except ValueError:
            raise CommandError(f"--alpha must be a number, got {options['alpha']!r}") from None
        try:
            campaign = find_campaign(options["campaign"])
            criterion = find_criterion(campaign=campaign, name=options["criterion"])
            request = read.report_request(
                criterion=criterion,
                judge=options["judge"] or "",
                method=options["method"],
                alpha=alpha,
                by_difficulty=options["by_difficulty"],
                shrinkage=options["shrinkage"],
                clusters=options["clusters"],
                combine=[name.strip() for name in options["combine"].split(",") if name.strip()],
            )
            shown = read.read_report(request)
        except EstimateError as exc:
            raise CommandError(f"--{exc}" if exc.field else str(exc)) from None
        output = options["output"]
        if fmt == "xlsx":
            files.write_workbook(shown=shown, sink=output)
        elif fmt == "csv":
            with open(output, "w", newline="", encoding="utf-8") as stream:
                files.write_csv(shown=shown, stream=stream)
        else:
            if fmt == "json":
                text = json.dumps(read.report_as_data(shown), indent=2, ensure_ascii=False)
            else:
                text = "\n".join(files.text_lines(shown=shown))
            if not output:
                self.stdout.write(text)
                return
            with open(output, "w", encoding="utf-8") as stream:
                stream.write(text + "\n")
        self.stdout.write(f"wrote {output}")
