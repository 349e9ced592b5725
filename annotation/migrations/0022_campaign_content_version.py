from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0021_queue_tables_autovacuum"),
    ]

    operations = [
        migrations.AddField(
            model_name="campaign",
            name="content_version",
            field=models.PositiveBigIntegerField(default=0, editable=False),
        ),
    ]
