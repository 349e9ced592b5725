"""python manage.py import_labels FILE --format label-studio|argilla --campaign NAME
[--judge NAME] [--mapping FILE]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.ingest import ImportFailed
from annotation.models import Campaign
from evaluation.interchange.loading import FORMATS, import_labels
from evaluation.interchange.vocabulary import read_vocabulary
from evaluation.judge.imported import IMPORTED


class Command(BaseCommand):
    help = (
        "Import human labels and model predictions from a Label Studio JSON export or Argilla 2.x "
        "records into a campaign's units (see docs/interchange.md). Any problem: nothing is imported."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="the JSON file to import")
        parser.add_argument("--format", required=True, choices=FORMATS)
        parser.add_argument("--campaign", required=True, help="name of an existing campaign")
        parser.add_argument(
            "--judge", default=IMPORTED, help=f"judge taking the predictions (default {IMPORTED})"
        )
        parser.add_argument("--mapping", help="JSON file: choice names to 0/1, question names to criteria")

    def handle(self, *args, **options) -> None:
        campaign = Campaign.objects.filter(name=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"campaign {options['campaign']!r} does not exist")
        try:
            summary = import_labels(
                path=options["path"],
                fmt=options["format"],
                campaign=campaign,
                vocabulary=read_vocabulary(path=options["mapping"]),
                judge_name=options["judge"],
            )
        except ImportFailed as exc:
            count = len(exc.errors) + exc.more
            raise CommandError(
                f"{count} error{'s' if count != 1 else ''}; nothing was imported.\n{exc.describe()}"
            ) from None
        for line in summary.lines():
            self.stdout.write(line)
