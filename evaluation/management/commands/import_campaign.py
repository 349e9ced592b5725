"""python manage.py import_campaign PATH --campaign NAME [--format F] [--mapping FILE] [--update]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser, no_translations

from annotation.ingest import ImportFailed, formats
from evaluation.imports.campaign_file import import_file


class Command(BaseCommand):
    help = (
        "Import questions, answers, their sources and existing labels from a JSONL, JSON, CSV or XLSX "
        "file, in our format or a published dataset's (HAGRID, ALCE, RAGTruth; see "
        "docs/import-format.md). Any bad row: nothing is imported."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="the file to import (.jsonl, .json, .csv, .xlsx)")
        parser.add_argument("--campaign", required=True, help="campaign name; created on first use")
        parser.add_argument(
            "--format",
            choices=formats.FORMAT_NAMES,
            default=formats.AUTO,
            help="the file's format (default: detected from its shape)",
        )
        parser.add_argument("--mapping", help="JSON object renaming the file's columns to ours")
        parser.add_argument(
            "--update",
            action="store_true",
            help="replace answers whose id is already in the campaign (refused when people labelled them)",
        )

    @no_translations  # refusals and notes in English, whatever the settings' language
    def handle(self, *args, **options) -> None:
        show = self.stderr.isatty() or options["verbosity"] > 1

        def progress(done: int, total: int) -> None:
            self.stderr.write(f"\rimporting: {done}/{total} answers", ending="\n" if done == total else "")
            self.stderr.flush()

        try:
            summary = import_file(
                path=options["path"],
                campaign_name=options["campaign"],
                mapping=options["mapping"],
                update=options["update"],
                progress=progress if show else None,
                format=options["format"],
            )
        except ImportFailed as exc:
            count = len(exc.errors) + exc.more
            raise CommandError(
                f"{count} error{'s' if count != 1 else ''}; nothing was imported.\n{exc.describe()}"
            ) from None
        for line in summary.lines():
            self.stdout.write(line)
