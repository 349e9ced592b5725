"""python manage.py gate --campaign NAME --criterion veracity --min-lower 0.85 [--theme T ...]
[--baseline NAME] [--judge NAME] [--baseline-judge NAME] [--alpha 0.05] [--method robust|study]
[--adjust holm|bonferroni] [--refuse-judge-drift] [--format text|json]

Exit codes: 0 the gate passed, 1 it failed, 2 the request was refused (bad or missing option,
unknown campaign, criterion, judge or theme).
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.errors import EstimateError
from evaluation.estimates.params import METHODS
from evaluation.reports import gate
from evaluation.reports.lookups import find_campaign, find_criterion
from inference import paired

FORMATS = ("text", "json")
PASSED, FAILED, REFUSED = 0, 1, 2


def _rate(options: dict, name: str, option: str) -> float:
    try:
        return float(options[name])
    except ValueError:
        raise CommandError(f"{option} must be a number, got {options[name]!r}", returncode=REFUSED) from None


class Command(BaseCommand):
    help = (
        "Release gate: exit 1 with a one-line reason when a theme's PPI++ lower bound is below "
        "--min-lower, or when the estimate dropped significantly against --baseline; 0 when it "
        "passes, 2 on a refused request."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--criterion", required=True)
        parser.add_argument("--min-lower", required=True, help="lowest PPI++ lower bound allowed (a rate)")
        parser.add_argument(
            "--theme",
            action="append",
            help="check this theme only (repeat for several; 'overall' is the overall estimate); "
            "default: every theme and overall",
        )
        parser.add_argument("--baseline", help="campaign to compare with (the previous version)")
        parser.add_argument("--judge", help="judge name (default: the campaign's only judge)")
        parser.add_argument(
            "--baseline-judge",
            help="the baseline's judge (default: its judge of the same name, else its only judge)",
        )
        parser.add_argument("--alpha", default="0.05", help="1 - confidence level (default 0.05)")
        parser.add_argument(
            "--method", default="robust", help=f"one of {', '.join(METHODS)} (default robust)"
        )
        parser.add_argument(
            "--adjust",
            default=paired.HOLM,
            help="how the drops' p-values are adjusted over the groups checked: "
            f"{' or '.join(paired.ADJUSTMENTS)} (default holm)",
        )
        parser.add_argument(
            "--refuse-judge-drift",
            action="store_true",
            help="also fail when the judge's agreement with the human labels changed between periods "
            "or from its model's previous prompt version (interval excluding 0); off by default",
        )
        parser.add_argument("--format", default="text", help=f"one of {', '.join(FORMATS)}")

    def handle(self, *args, **options) -> None:
        if options["format"] not in FORMATS:
            raise CommandError(
                f"--format must be one of {', '.join(FORMATS)}, got {options['format']!r}", returncode=REFUSED
            )
        min_lower = _rate(options, "min_lower", "--min-lower")
        alpha = _rate(options, "alpha", "--alpha")
        try:
            campaign = find_campaign(options["campaign"])
            criterion = find_criterion(campaign=campaign, name=options["criterion"])
            baseline = find_campaign(options["baseline"], field="baseline") if options["baseline"] else None
            result = gate.evaluate_gate(
                campaign=campaign,
                criterion=criterion,
                min_lower=min_lower,
                themes=options["theme"],
                baseline=baseline,
                judge=options["judge"],
                baseline_judge=options["baseline_judge"],
                alpha=alpha,
                method=options["method"],
                adjustment=options["adjust"],
                refuse_judge_drift=options["refuse_judge_drift"],
            )
        except EstimateError as exc:
            raise CommandError(str(exc), returncode=REFUSED) from None
        if options["format"] == "json":
            # stdout stays one JSON document; the verdict line goes to the log.
            self.stdout.write(json.dumps(result.as_dict(), indent=2, ensure_ascii=False))
            self.stderr.write(result.line)
        else:
            self.stdout.write("\n".join(gate.text_lines(result=result)))
        if not result.passed:
            sys.exit(FAILED)
