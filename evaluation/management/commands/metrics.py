"""python manage.py metrics --campaign NAME [--format json|table] [--alpha 0.05]"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser, no_translations

from annotation.models import Campaign
from evaluation.measures.automatic import compute_metrics, metrics_as_json, metrics_table


class Command(BaseCommand):
    help = (
        "Automatic metrics of a campaign (correct language, response, functional citations, "
        "abstention on inappropriate questions) per theme x difficulty, with Wald intervals."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True, help="campaign name")
        parser.add_argument("--format", choices=["table", "json"], default="table")
        parser.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level (0.05: 95%%)")

    @no_translations  # refusals and notes in English, whatever the settings' language
    def handle(self, *args, **options) -> None:
        try:
            campaign = Campaign.objects.get(name=options["campaign"])
        except Campaign.DoesNotExist:
            raise CommandError(f"campaign {options['campaign']!r} does not exist") from None
        alpha = options["alpha"]
        try:
            rows = compute_metrics(campaign=campaign, alpha=alpha)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if options["format"] == "json":
            self.stdout.write(
                json.dumps(metrics_as_json(campaign=campaign, rows=rows), ensure_ascii=False, indent=2)
            )
        else:
            self.stdout.write(metrics_table(rows=rows, alpha=alpha), ending="")
