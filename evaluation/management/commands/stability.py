"""python manage.py stability --campaign NAME [--criterion NAME | --metric NAME] --format json|table|csv"""

from __future__ import annotations

import csv
import json

from django.core.management.base import BaseCommand, CommandError, CommandParser, no_translations

from annotation.models import Campaign
from evaluation import errors
from evaluation.estimates import judge_choice
from evaluation.management.output import output_stream
from evaluation.measures import automatic, stability
from evaluation.reports import measure_tables

FORMATS = ("table", "json", "csv")


class Command(BaseCommand):
    help = (
        "Stability across repetitions of one criterion or automatic metric: per question the rate "
        "and spread across its repetitions, the share of questions whose repetitions disagree, "
        "ICC(1), and the interval's width against the number of repetitions used."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True, help="campaign name")
        parser.add_argument("--criterion", help="criterion name (default: the first by name)")
        parser.add_argument("--metric", help=f"an automatic metric instead: {', '.join(automatic.METRICS)}")
        parser.add_argument("--source", default="judge", help="judge (default) or human: whose labels")
        parser.add_argument("--judge", help="judge name (default: the campaign's only judge)")
        parser.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level (default 0.05)")
        parser.add_argument("--draws", type=int, default=stability.DEFAULT_DRAWS, help="subsamples per r")
        parser.add_argument("--seed", type=int, default=stability.DEFAULT_SEED)
        parser.add_argument("--format", default="table", choices=FORMATS)
        parser.add_argument("--output", help="file to write instead of the standard output")

    @no_translations  # refusals in English, whatever the settings' language
    def handle(self, *args, **options) -> None:
        fmt = options["format"]
        if options["criterion"] and options["metric"]:
            raise CommandError("give --criterion or --metric, not both")
        try:
            campaign = Campaign.objects.get(name=options["campaign"])
        except Campaign.DoesNotExist:
            raise CommandError(f"campaign {options['campaign']!r} does not exist") from None
        criteria = list(campaign.criteria.order_by("name"))
        if options["metric"]:
            key = f"metric:{options['metric']}"
        elif options["criterion"]:
            key = f"criterion:{options['criterion']}"
        else:
            key = stability.default_measure(criteria=criteria).key
        try:
            measure = stability.parse_measure(key=key, criteria=criteria)
            judge = None
            if measure.kind != stability.METRIC and options["source"] == stability.JUDGE:
                assert measure.criterion is not None
                judge = judge_choice.require_judge(criterion=measure.criterion, name=options["judge"] or "")
            result = stability.compute_stability(
                campaign=campaign,
                measure=measure,
                source=options["source"],
                judge=judge,
                alpha=options["alpha"],
                draws=options["draws"],
                seed=options["seed"],
            )
        except errors.EstimateError as exc:
            option = {"measure": "metric" if options["metric"] else "criterion"}.get(
                exc.field or "", exc.field
            )
            raise CommandError(f"--{option}: {exc.reason}" if option else str(exc)) from None
        output = options["output"]
        with output_stream(self, output) as stream:
            if fmt == "csv":
                csv.writer(stream).writerows(measure_tables.stability_csv_rows(stability=result))
            elif fmt == "json":
                stream.write(
                    json.dumps(stability.stability_as_json(stability=result), indent=2, ensure_ascii=False)
                )
                stream.write("\n")
            else:
                stream.write("\n".join(measure_tables.stability_lines(stability=result)) + "\n")
        if output:
            self.stdout.write(f"wrote {output}")
