"""One slot of a unit at a stage per person (the blind slots never both to one person).

Before the constraint, a race between a person's submit and their prefetch (or two presses at
once) could hand them both blind slots of a unit: one filled, the other a lease that renewed
itself for ever, which the queue offered back and the submit refused. Such leases are removed
first (the filled slot stays; of two leases the latest stays), and their open slots freed, so
that the unit's second label can go to someone else.
"""

from __future__ import annotations

from django.db import migrations, models


def release_second_slots(apps, schema_editor):
    Assignment = apps.get_model("annotation", "Assignment")
    OpenSlot = apps.get_model("annotation", "OpenSlot")
    seen: dict[tuple[int, int, str, int], int] = {}
    doomed = []
    rows = Assignment.objects.order_by(
        "unit_id",
        "criterion_id",
        "stage",
        "user_id",
        models.F("label_id").desc(nulls_last=True),
        "-updated_at",
        "-id",
    ).values_list("id", "unit_id", "criterion_id", "stage", "user_id", "slot", "label_id")
    for pk, unit_id, criterion_id, stage, user_id, slot, label_id in rows.iterator():
        key = (unit_id, criterion_id, stage, user_id)
        if key in seen and label_id is None:
            doomed.append((pk, unit_id, criterion_id, stage, slot))
        else:
            seen.setdefault(key, pk)
    for pk, unit_id, criterion_id, stage, slot in doomed:
        Assignment.objects.filter(pk=pk).delete()
        OpenSlot.objects.filter(criterion_id=criterion_id, unit_id=unit_id, stage=stage, slot=slot).update(
            held_until=None
        )


class Migration(migrations.Migration):
    dependencies = [("annotation", "0016_citation_pattern_checked")]

    operations = [
        migrations.RunPython(release_second_slots, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="assignment",
            constraint=models.UniqueConstraint(
                fields=("unit", "criterion", "stage", "user"), name="assignment_one_slot_per_person"
            ),
        ),
    ]
