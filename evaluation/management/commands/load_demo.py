"""python manage.py load_demo: the demo campaign and its people (demo passwords: never in production)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, no_translations

from annotation.ingest import ImportFailed
from evaluation.demo.campaign import DEMO_MEMBERS, DEMO_PASSWORD, DEMO_SUPERUSER, load_demo


class Command(BaseCommand):
    help = (
        "Load the demo campaign and create demo users (manager, annotator1-3, adjudicator, analyst, "
        f"superuser {DEMO_SUPERUSER}) with the password '{DEMO_PASSWORD}'. Safe to run twice."
    )

    @no_translations  # refusals and notes in English, whatever the settings' language
    def handle(self, *args, **options) -> None:
        try:
            result = load_demo()
        except ImportFailed as exc:
            raise CommandError(f"the demo file is invalid:\n{exc.describe()}") from None
        if result.imported is not None:
            for line in result.imported.lines():
                self.stdout.write(line)
        if result.users_created:
            self.stdout.write(f"users created: {', '.join(result.users_created)}")
        if result.memberships_created:
            self.stdout.write(f"memberships added: {result.memberships_created}")
        for line in result.step_lines:
            self.stdout.write(line)
        if not result.changed:
            self.stdout.write(
                f"The demo campaign {result.campaign.name!r} is already loaded: nothing changed."
            )
        width = max(len(name) for name in [*DEMO_MEMBERS, DEMO_SUPERUSER]) + 2
        self.stdout.write(f"Log in at /login/ with the password '{DEMO_PASSWORD}' as:")
        for username, roles in DEMO_MEMBERS.items():
            self.stdout.write(f"  {username:<{width}}{', '.join(roles)}")
        self.stdout.write(
            f"  {DEMO_SUPERUSER:<{width}}superuser: every role in every campaign, and the admin site"
        )
        self.stdout.write("Demo accounts only: never keep them on a real server.")
