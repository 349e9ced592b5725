"""python manage.py reference_answers --campaign NAME [--normalisation auto|squad|en|fr]
[--alpha 0.05] --format table|json|csv"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser, no_translations

from annotation.models import Campaign
from evaluation.measures.overlap import NORMALISATIONS
from evaluation.measures.reference_answers import (
    ReferenceError,
    reference_report,
    report_as_json,
    report_table,
    write_csv,
)


class Command(BaseCommand):
    help = (
        "Answers against their questions' reference answers: exact match and token F1 (SQuAD's) and "
        "ROUGE-L (rouge-score's, no stemming), per theme and overall, with bootstrap intervals over "
        "questions."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True, help="campaign name")
        parser.add_argument(
            "--normalisation",
            choices=NORMALISATIONS,
            default="auto",
            help="auto (by the question's language: fr or en), squad (SQuAD v1.1's exactly), en or fr",
        )
        parser.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level (0.05: 95%%)")
        parser.add_argument("--format", choices=["table", "json", "csv"], default="table")

    @no_translations  # refusals in English, whatever the settings' language
    def handle(self, *args, **options) -> None:
        campaign = Campaign.objects.filter(name=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"--campaign: no campaign named {options['campaign']!r}")
        try:
            report = reference_report(
                campaign=campaign, normalisation=options["normalisation"], alpha=options["alpha"]
            )
        except ReferenceError as exc:
            raise CommandError(f"--{exc.field}: {exc.reason}") from None
        if options["format"] == "json":
            self.stdout.write(json.dumps(report_as_json(report), indent=2, ensure_ascii=False))
        elif options["format"] == "csv":
            write_csv(report=report, stream=self.stdout)
        else:
            self.stdout.write(report_table(report))
