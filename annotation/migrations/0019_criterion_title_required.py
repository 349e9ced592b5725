"""A criterion's title is required and unique in its campaign, on its folded form (the titles
were given by the previous migration)."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("annotation", "0018_criterion_titles")]

    operations = [
        migrations.AlterField(
            model_name="criterion",
            name="title",
            field=models.CharField(max_length=200),
        ),
        migrations.AddConstraint(
            model_name="criterion",
            constraint=models.UniqueConstraint(
                fields=("campaign", "title_key"),
                name="criterion_unique_title",
                violation_error_message="The campaign has a criterion with this title already.",
            ),
        ),
        migrations.AddConstraint(
            model_name="criterion",
            constraint=models.CheckConstraint(
                condition=models.Q(("title_key", ""), _negated=True),
                name="criterion_has_title",
                violation_error_message="A criterion needs a title.",
            ),
        ),
    ]
