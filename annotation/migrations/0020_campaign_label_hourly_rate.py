"""What an hour of labelling costs, set by a manager on the campaign for the planner of judges."""

import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0019_criterion_title_required"),
    ]

    operations = [
        migrations.AddField(
            model_name="campaign",
            name="label_hourly_rate",
            field=models.FloatField(
                blank=True,
                help_text="Cost of an hour of labelling, in the unit of the judges' prices; blank: not set.",
                null=True,
                validators=[django.core.validators.MinValueValidator(0.0)],
            ),
        ),
    ]
