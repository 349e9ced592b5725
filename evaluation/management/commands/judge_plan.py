"""python manage.py judge_plan --campaign NAME --criterion NAME [--target 0.05] [--alpha 0.05]
[--judge A --judge B] [--minutes-per-label M] [--format table|json|csv] [--output FILE]

The planner of several judges on a binary criterion, as on its page: per theme which judges to
run on which share of the units and how many human labels to have in all, at least cost for the
half-width ``--target``, beside the best single judge and human labels alone, with the totals
and the ledger's figures and sources (``evaluation.designs.judge_plan``). The page's defaults:
the criterion's first judges, the people's pace per label. Exit code 1 when refused.
"""

from __future__ import annotations

import csv
import json

from django.core.management.base import BaseCommand, CommandError, CommandParser, no_translations

from evaluation.designs import judge_plan
from evaluation.errors import EstimateError
from evaluation.forms.designs import requested_plan
from evaluation.management.output import output_stream
from evaluation.reports import measure_tables
from evaluation.reports.lookups import find_campaign, find_criterion

FORMATS = ("table", "json", "csv")
OPTIONS = {"minutes": "minutes-per-label", "judges": "judge"}


class Command(BaseCommand):
    help = (
        "Plan several judges on a binary criterion: per theme the judges and their shares and the "
        "human labels to draw at least cost for a half-width, beside the best single judge and "
        "human labels alone, with the ledger's figures."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True, help="campaign name")
        parser.add_argument("--criterion", required=True, help="criterion name")
        parser.add_argument(
            "--target", type=float, help=f"half-width per theme (default {judge_plan.DEFAULT_TARGET})"
        )
        parser.add_argument("--alpha", type=float, help="1 - confidence level (default 0.05)")
        parser.add_argument(
            "--judge",
            action="append",
            dest="judges",
            help=f"a judge to consider, at most {judge_plan.MAX_JUDGES} (default: the first ones)",
        )
        parser.add_argument(
            "--minutes-per-label", type=float, help="a label's minutes instead of the people's pace"
        )
        parser.add_argument("--format", default="table", choices=FORMATS)
        parser.add_argument("--output", help="file to write instead of the standard output")

    @no_translations  # refusals in English, whatever the settings' language
    def handle(self, *args, **options) -> None:
        fmt = options["format"]
        try:
            campaign = find_campaign(options["campaign"])
            criterion = find_criterion(campaign=campaign, name=options["criterion"])
            plan = requested_plan(
                criterion=criterion,
                target=options["target"],
                alpha=options["alpha"],
                judges=options["judges"],
                minutes=options["minutes_per_label"],
            )
        except EstimateError as exc:
            option = OPTIONS.get(exc.field or "", exc.field)
            raise CommandError(f"--{option}: {exc.reason}" if option else str(exc)) from None
        data = judge_plan.plan_as_json(plan)
        output = options["output"]
        with output_stream(self, output) as stream:
            if fmt == "csv":
                csv.writer(stream).writerows(measure_tables.judge_plan_csv_rows(data=data))
            elif fmt == "json":
                stream.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
            else:
                stream.write("\n".join(measure_tables.judge_plan_lines(data=data)) + "\n")
        if output:
            self.stdout.write(f"wrote {output}")
