"""Tokens expire (API_TOKEN_DAYS, 90 by default, counted from this migration for the tokens made
before it) and say why they were revoked; the tokens revoked before it were revoked by their
person."""

from django.db import migrations, models

import api.models


def revoked_by_their_person(apps, schema_editor):
    token = apps.get_model("api", "ApiToken")
    token.objects.filter(revoked_at__isnull=False).update(revoked_because="person")


class Migration(migrations.Migration):
    dependencies = [
        ("api", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(default=api.models.default_expiry),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="revoked_because",
            field=models.CharField(
                blank=True,
                choices=[
                    ("person", "by its person"),
                    ("password", "the password changed"),
                    ("deactivated", "the account was deactivated"),
                ],
                max_length=12,
            ),
        ),
        migrations.RunPython(revoked_by_their_person, migrations.RunPython.noop, elidable=True),
    ]
