"""python manage.py primary_judge --campaign NAME --criterion NAME [--judge NAME | --clear]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser, no_translations

from evaluation.errors import EstimateError
from evaluation.estimates import judge_choice
from evaluation.reports.lookups import find_campaign, find_criterion


class Command(BaseCommand):
    help = (
        "Make a judge the primary judge of a criterion: the one its reports, the API and the gate "
        "read when no judge is named. Without --judge or --clear: says which judge that is now, "
        "and the judges that labeled the criterion."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--criterion", required=True)
        choice = parser.add_mutually_exclusive_group()
        choice.add_argument("--judge", help="a judge with at least one successful judgment of the criterion")
        choice.add_argument("--clear", action="store_true", help="no primary judge any more")

    @no_translations  # refusals in English, whatever the settings' language
    def handle(self, *args, **options) -> None:
        try:
            campaign = find_campaign(options["campaign"])
            criterion = find_criterion(campaign=campaign, name=options["criterion"])
            if options["judge"] or options["clear"]:
                judge_choice.set_primary_judge(criterion=criterion, name=options["judge"] or "")
        except EstimateError as exc:
            raise CommandError(f"--{exc}" if exc.field else str(exc)) from None
        judges = judge_choice.candidates(criterion=criterion)
        chosen, how = judge_choice.default_choice(judges=judges)
        names = ", ".join(judge.name for judge in judges) or "none"
        if chosen is None:
            self.stdout.write(f"{criterion.name}: no default judge (judges that labeled it: {names})")
        else:
            self.stdout.write(
                f"{criterion.name}: {chosen.name} ({how.replace('_', ' ')}; judges that labeled it: {names})"
            )
