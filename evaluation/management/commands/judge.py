"""python manage.py judge --campaign NAME --criterion veracity --judge NAME [...]"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser, no_translations

from annotation.models import Campaign, Criterion
from evaluation.jobs import start_judge_run
from evaluation.judge import confidence, preflight, runs
from evaluation.models import JudgeRun


def _show_bar(run: JudgeRun) -> None:
    sys.stderr.write(_bar(run))


def _bar(run: JudgeRun, width: int = 30) -> str:
    done = int(run.progress * width)
    return (
        f"\r[{'#' * done}{'.' * (width - done)}] {run.done_units + run.failed_units}/{run.total_units} "
        f"units, {run.failed_units} failed, {run.prompt_tokens + run.completion_tokens} tokens"
    )


class Command(BaseCommand):
    help = "Judge every unit of a criterion with one judge (a judge is created on first use of its name)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--criterion", required=True)
        parser.add_argument("--judge", required=True, help="judge name; 'lexical' is the offline judge")
        parser.add_argument("--model")
        parser.add_argument("--prompt-version")
        parser.add_argument("--base-url", help="OpenAI-compatible server for a new judge")
        parser.add_argument(
            "--confidence",
            choices=confidence.MODES,
            help="where a new LLM judge's confidence in each verdict comes from (default: logprobs)",
        )
        parser.add_argument(
            "--confidence-samples",
            type=int,
            help=f"completions per prompt for --confidence samples (default {confidence.DEFAULT_SAMPLES})",
        )
        scope = parser.add_mutually_exclusive_group()
        scope.add_argument("--only-missing", action="store_true")
        scope.add_argument("--only-failed", action="store_true")
        scope.add_argument(
            "--only-share",
            action="store_true",
            help="the judge's drawn share of the criterion (the planner's page) and the labelled units",
        )
        parser.add_argument("--concurrency", type=int)
        parser.add_argument("--token-budget", type=int)
        parser.add_argument(
            "--background",
            action="store_true",
            help="hand the run to the Celery workers instead of running here",
        )

    @no_translations  # refusals and notes in English, whatever the settings' language
    def handle(self, *args, **options) -> None:
        try:
            campaign = Campaign.objects.get(name=options["campaign"])
        except Campaign.DoesNotExist:
            raise CommandError(f"campaign {options['campaign']!r} does not exist") from None
        try:
            criterion = Criterion.objects.get(campaign=campaign, name=options["criterion"])
        except Criterion.DoesNotExist:
            raise CommandError(
                f"criterion {options['criterion']!r} does not exist in {campaign.name!r}"
            ) from None
        if options["confidence_samples"] is not None and options["confidence_samples"] < 2:
            raise CommandError("--confidence-samples must be at least 2")
        if options["concurrency"] is not None and options["concurrency"] < 1:
            raise CommandError("--concurrency must be at least 1")
        scope = (
            JudgeRun.Scope.MISSING
            if options["only_missing"]
            else JudgeRun.Scope.FAILED
            if options["only_failed"]
            else JudgeRun.Scope.SHARE
            if options["only_share"]
            else JudgeRun.Scope.ALL
        )
        try:
            judge = runs.get_or_create_judge(
                campaign=campaign,
                name=options["judge"],
                model=options["model"],
                prompt_version=options["prompt_version"],
                base_url=options["base_url"],
                confidence_source=options["confidence"],
                confidence_samples=options["confidence_samples"],
                check=preflight.check_judge,
            )
            if options["background"]:
                run = start_judge_run(
                    criterion=criterion,
                    judge=judge,
                    scope=scope,
                    concurrency=options["concurrency"],
                    token_budget=options["token_budget"],
                )
                self.stdout.write(f"run {run.pk}: {run.total_units} units handed to the workers")
                return
            run = runs.create_run(
                criterion=criterion,
                judge=judge,
                scope=scope,
                concurrency=options["concurrency"],
                token_budget=options["token_budget"],
            )
        except runs.RunError as exc:
            raise CommandError(str(exc)) from None
        show = sys.stderr.isatty() or options["verbosity"] > 1
        run = runs.run_inline(
            run_id=run.pk,
            concurrency=options["concurrency"],
            progress=_show_bar if show else None,
        )
        if show:
            sys.stderr.write("\n")
        self.stdout.write(
            f"run {run.pk} {run.status}: {run.done_units} judged, {run.failed_units} failed of "
            f"{run.total_units} units ({run.status_text}); {run.calls} calls, {run.prompt_tokens} "
            f"prompt + {run.completion_tokens} completion tokens, cost {run.cost:.4f}"
        )
        # The failures grouped by reason, most frequent first: one line each, not one per unit.
        for reason in runs.failure_reasons(run=run, units=5, reasons=10):
            units = ", ".join(str(unit["unit_id"]) for unit in reason.units)
            more = f" and {reason.more} more" if reason.more else ""
            self.stdout.write(f"  {reason.count} x {reason.error}\n    units {units}{more}")
        if run.status == JudgeRun.Status.FAILED:
            raise CommandError(f"run {run.pk} failed: none of its {run.total_units} units was judged")
