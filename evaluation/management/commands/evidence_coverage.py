"""python manage.py evidence_coverage --campaign NAME [--campaign OTHER ...] [--budgets 100,200]
[--k 1,3,5,10] [--criterion NAME --insufficient-category V --correct-category V]
[--conventions attest|authors] [--unit tokens|characters|words|tokenizer --tokenizer FILE] [--no-nfc]
--format json|table"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser, no_translations

from annotation.models import Campaign
from evaluation.measures.coverage import (
    DEFAULT_BUDGETS,
    TOKENIZER,
    TOKENS,
    UNITS,
    Conventions,
    TokenizerUnavailable,
    authors,
    load_tokenizer,
    parse_budgets,
)
from evaluation.measures.evidence import EvidenceError, evidence_report, report_as_json, reports_table
from evaluation.measures.retrieval import DEFAULT_KS


def _numbers(option: str, text: str) -> list[int]:
    try:
        return parse_budgets(text)
    except ValueError as exc:
        raise CommandError(f"--{option}: {exc}; give positive whole numbers separated by commas") from None


class Command(BaseCommand):
    help = (
        "Evidence coverage of answers (gold passages found in the first N tokens of the retrieved "
        "chunks) and retrieval ranking metrics (gold chunk ids), per theme, for one campaign or "
        "several side by side."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--campaign", required=True, action="append", help="campaign name; repeat to compare several"
        )
        parser.add_argument(
            "--budgets",
            default=",".join(map(str, DEFAULT_BUDGETS)),
            help="token budgets N, comma-separated (default 100 to 1000 by 100)",
        )
        parser.add_argument(
            "--k", default=",".join(map(str, DEFAULT_KS)), help="ranks k of the ranking metrics"
        )
        parser.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level (0.05: 95%%)")
        parser.add_argument(
            "--criterion", help="an answer-level criterion whose final human labels calibrate the score"
        )
        parser.add_argument(
            "--insufficient-category", type=int, help="its value meaning 'not enough information'"
        )
        parser.add_argument("--correct-category", type=int, help="its value meaning 'fully correct'")
        parser.add_argument(
            "--fit-budget", type=int, help="the budget the calibration uses (default: the largest)"
        )
        parser.add_argument(
            "--conventions",
            choices=["attest", "authors"],
            default="attest",
            help="attest (chunks joined by a blank line, N units kept, short answers scored on all "
            "their text) or authors (joined by one space, N - 1 units kept, answers shorter than N "
            "left out of budget N's mean)",
        )
        parser.add_argument(
            "--unit", choices=UNITS, default=TOKENS, help="what a budget counts (tokenizer: --tokenizer)"
        )
        parser.add_argument("--tokenizer", help="a local tokenizer.json file (needs the tokenizers package)")
        parser.add_argument(
            "--no-nfc", action="store_true", help="match the texts as stored, without Unicode NFC"
        )
        parser.add_argument("--format", choices=["table", "json"], default="table")

    @no_translations  # refusals in English, whatever the settings' language
    def handle(self, *args, **options) -> None:
        budgets = _numbers("budgets", options["budgets"])
        ks = _numbers("k", options["k"])
        campaigns = []
        for name in options["campaign"]:
            campaign = Campaign.objects.filter(name=name).first()
            if campaign is None:
                raise CommandError(f"--campaign: campaign {name!r} does not exist")
            campaigns.append(campaign)
        tokenizer = None
        unit = options["unit"]
        if options["tokenizer"]:
            try:
                tokenizer = load_tokenizer(options["tokenizer"])
            except TokenizerUnavailable as exc:
                raise CommandError(f"--tokenizer: {exc}") from None
            unit = TOKENIZER
        elif unit == TOKENIZER:
            raise CommandError("--unit tokenizer: give the tokenizer's file with --tokenizer")
        nfc = not options["no_nfc"]
        conventions = (
            authors(unit=unit, tokenizer=tokenizer, nfc=nfc)
            if options["conventions"] == "authors"
            else Conventions(unit=unit, tokenizer=tokenizer, nfc=nfc)
        )
        reports = []
        for campaign in campaigns:
            try:
                reports.append(
                    evidence_report(
                        campaign=campaign,
                        budgets=budgets,
                        ks=ks,
                        alpha=options["alpha"],
                        criterion=options["criterion"],
                        insufficient=options["insufficient_category"],
                        correct=options["correct_category"],
                        fit_budget=options["fit_budget"],
                        conventions=conventions,
                    )
                )
            except EvidenceError as exc:
                raise CommandError(f"--{(exc.field or 'campaign').replace('_', '-')}: {exc.reason}") from None
        if options["format"] == "json":
            data = [report_as_json(report) for report in reports]
            self.stdout.write(json.dumps(data[0] if len(data) == 1 else data, ensure_ascii=False, indent=2))
        else:
            self.stdout.write(reports_table(reports))
