"""python manage.py report --campaign NAME --criterion relevance --format json|table|xlsx|csv [--shrinkage]"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser, no_translations

from annotation.criteria.categories import is_categorical
from annotation.models import Campaign, Criterion
from evaluation import errors
from evaluation.estimates import codec, params, small_themes
from evaluation.estimates.categorical import categorical_report_as_json, compute_categorical_report
from evaluation.estimates.codec import with_shrinkage
from evaluation.estimates.report import compute_report
from evaluation.measures import citations
from evaluation.reports import categorical_files, exports, judge_choice

FORMATS = ("json", "table", "xlsx", "csv")


class Command(BaseCommand):
    help = (
        "Per-theme and overall estimates (human-only, judge-only, PPI++) for one criterion; per "
        "category and group, with the confusion matrices, for a criterion with categories."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--criterion", required=True)
        parser.add_argument("--format", default="table", help=f"one of {', '.join(FORMATS)}")
        parser.add_argument("--output", help="file to write (required for xlsx and csv)")
        parser.add_argument("--judge", help="judge name (default: the campaign's only judge)")
        parser.add_argument("--alpha", default="0.05", help="1 - confidence level (default 0.05)")
        parser.add_argument("--method", default="robust", help="robust (default) or study")
        parser.add_argument("--by-difficulty", action="store_true", help="add theme x difficulty rows")
        parser.add_argument(
            "--shrinkage",
            action="store_true",
            help="add each theme's PPI++ estimate shrunk toward the judge (PAS; 95%% on average over "
            "the themes, not per theme; binary criteria, at least 2 themes)",
        )

    @no_translations  # refusals and notes in English, whatever the settings' language
    def handle(self, *args, **options) -> None:
        fmt = options["format"]
        if fmt not in FORMATS:
            raise CommandError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
        if fmt in ("xlsx", "csv") and not options["output"]:
            raise CommandError(f"--format {fmt} needs --output FILE")
        try:
            alpha = float(options["alpha"])
        except ValueError:
            raise CommandError(f"--alpha must be a number, got {options['alpha']!r}") from None
        if not (0 < alpha < 1):
            raise CommandError(f"--alpha must be between 0 and 1, got {options['alpha']}")
        if options["method"] not in params.METHODS:
            raise CommandError(
                f"--method must be one of {', '.join(params.METHODS)}, got {options['method']!r}"
            )
        try:
            campaign = Campaign.objects.get(name=options["campaign"])
        except Campaign.DoesNotExist:
            raise CommandError(f"campaign {options['campaign']!r} does not exist") from None
        try:
            criterion = Criterion.objects.get(campaign=campaign, name=options["criterion"])
        except Criterion.DoesNotExist:
            names = ", ".join(campaign.criteria.values_list("name", flat=True)) or "none"
            raise CommandError(
                f"criterion {options['criterion']!r} does not exist in {campaign.name!r} (criteria: {names})"
            ) from None
        if options["shrinkage"]:
            try:
                small_themes.check_shrinkage(method=options["method"], categorical=is_categorical(criterion))
            except errors.EstimateError as exc:
                raise CommandError(f"--{exc}") from None
        if is_categorical(criterion):
            self._categorical(campaign=campaign, criterion=criterion, fmt=fmt, alpha=alpha, options=options)
            return
        try:
            judge = judge_choice.default_judge(campaign=campaign, name=options["judge"])
            report = compute_report(
                criterion=criterion,
                judge=judge,
                alpha=alpha,
                method=options["method"],
                by_difficulty=options["by_difficulty"],
            )
        except errors.EstimateError as exc:
            raise CommandError(str(exc)) from None
        small = None
        if options["shrinkage"]:
            try:
                small = small_themes.shrink_report(report=report)
            except errors.EstimateError as exc:
                raise CommandError(f"--{exc}") from None

        output = options["output"]
        if fmt == "xlsx":
            exports.build_workbook(
                campaign=campaign, criteria_reports=[report], path_or_buffer=output, shrinkages=[small]
            )
            self.stdout.write(f"wrote {output}")
            return
        if fmt == "csv":
            with open(output, "w", newline="", encoding="utf-8") as stream:
                exports.write_csv(report=report, stream=stream, small=small)
            self.stdout.write(f"wrote {output}")
            return
        if fmt == "json":
            data = codec.report_as_json(report=report)
            if small is not None:
                data = with_shrinkage(data=data, small=small)
            data = citations.with_citation_measures(
                data=data,
                criterion=criterion,
                judge=judge,
                precision=report,
            )
            text = json.dumps(data, indent=2, ensure_ascii=False)
        else:
            text = "\n".join(exports.table_lines(report=report, small=small))
        if output:
            with open(output, "w", encoding="utf-8") as stream:
                stream.write(text + "\n")
            self.stdout.write(f"wrote {output}")
        else:
            self.stdout.write(text)

    def _categorical(
        self, *, campaign: Campaign, criterion: Criterion, fmt: str, alpha: float, options
    ) -> None:
        """A criterion with categories: per category and group, with the confusion matrices."""
        try:
            judge = judge_choice.default_judge(campaign=campaign, name=options["judge"], criterion=criterion)
            report = compute_categorical_report(
                criterion=criterion,
                judge=judge,
                alpha=alpha,
                method=options["method"],
                by_difficulty=options["by_difficulty"],
            )
        except errors.EstimateError as exc:
            raise CommandError(str(exc)) from None
        output = options["output"]
        if fmt == "xlsx":
            categorical_files.build_workbook(campaign=campaign, report=report, path_or_buffer=output)
        elif fmt == "csv":
            with open(output, "w", newline="", encoding="utf-8") as stream:
                categorical_files.write_csv(report=report, stream=stream)
        else:
            if fmt == "json":
                text = json.dumps(categorical_report_as_json(report=report), indent=2, ensure_ascii=False)
            else:
                text = "\n".join(categorical_files.table_lines(report=report))
            if not output:
                self.stdout.write(text)
                return
            with open(output, "w", encoding="utf-8") as stream:
                stream.write(text + "\n")
        self.stdout.write(f"wrote {output}")
