"""python manage.py judge_alignment --campaign NAME --criterion NAME [--alpha 0.05]
[--clusters answer|question] [--part split|selection|held_out|all] [--format json|csv]
[--output FILE]

Each judge of a binary criterion against the final human labels, by theme and overall, with
Dorner's ceiling and the drifts flagged, overall and per theme
(``evaluation.measures.judge_alignment``), as the page's JSON or CSV. ``--part``: the units of
the criterion's held-out split the figures are on, as on the page (by default ``split``, prompts
compared on the selection part and figures on the held-out part, when the criterion has a split;
``all`` otherwise, the only choice). Exit code 1 when the request is refused.
"""

from __future__ import annotations

import csv
import json

from django.core.management.base import BaseCommand, CommandError, CommandParser, no_translations

from evaluation.designs import held_out
from evaluation.errors import EstimateError
from evaluation.estimates.params import ANSWER, CLUSTERS
from evaluation.management.output import output_stream
from evaluation.measures import judge_alignment
from evaluation.reports import measure_tables
from evaluation.reports.lookups import find_campaign, find_criterion

FORMATS = ("json", "csv")


class Command(BaseCommand):
    help = (
        "Each judge of a binary criterion against the final human labels: agreement, kappa, "
        "sensitivity, specificity with intervals, confusion table, Dorner's ceiling, and the drift "
        "between prompt versions and periods."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True, help="campaign name")
        parser.add_argument("--criterion", required=True, help="criterion name")
        parser.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level (default 0.05)")
        parser.add_argument(
            "--clusters", default=ANSWER, help=f"one of {', '.join(CLUSTERS)}: what the intervals are about"
        )
        parser.add_argument(
            "--part",
            help=f"one of {', '.join(judge_alignment.PARTS)} (default split with a held-out split, else all)",
        )
        parser.add_argument("--format", default="json", choices=FORMATS)
        parser.add_argument("--output", help="file to write instead of the standard output")

    @no_translations  # refusals in English, whatever the settings' language
    def handle(self, *args, **options) -> None:
        fmt = options["format"]
        try:
            campaign = find_campaign(options["campaign"])
            criterion = find_criterion(campaign=campaign, name=options["criterion"])
            split = held_out.split_of(criterion=criterion)
            part = options["part"] or (judge_alignment.SPLIT if split else held_out.ALL)
            result = judge_alignment.compute_judge_alignment(
                criterion=criterion,
                alpha=options["alpha"],
                clusters=options["clusters"],
                part=part,
                split=split,
            )
        except EstimateError as exc:
            raise CommandError(f"--{exc.field}: {exc.reason}" if exc.field else str(exc)) from None
        output = options["output"]
        with output_stream(self, output) as stream:
            if fmt == "csv":
                csv.writer(stream).writerows(measure_tables.judge_alignment_csv_rows(result=result))
            else:
                data = judge_alignment.judge_alignment_as_json(result=result)
                stream.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
