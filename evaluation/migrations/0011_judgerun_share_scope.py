"""A judge run may cover the judge's drawn share of a criterion (and the labelled units)."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0010_judge_shares")]

    operations = [
        migrations.AlterField(
            model_name="judgerun",
            name="scope",
            field=models.CharField(
                choices=[
                    ("all", "All units"),
                    ("missing", "Units not yet judged"),
                    ("failed", "Units whose judgment failed"),
                    ("share", "Units of the judge's share, and the labelled units"),
                ],
                default="all",
                max_length=10,
            ),
        ),
    ]
