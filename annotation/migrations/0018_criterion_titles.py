"""Every criterion gets a title, unique in its campaign (case and accents aside).

A criterion without a title was shown by its slug (``tone_b``); it gets one made from its name
("Tone b"). Two criteria of a campaign whose titles are the same once folded keep the first
(built-in criteria first, then by age) and the others get their name added: "Completeness
(completeness_v2)". The folded title is stored in ``title_key``; the next migration puts the
constraints on it. The functions are copied here, as they are today, from
``annotation.criteria.titles``: this migration must do tomorrow what it does today.
"""

from __future__ import annotations

import re
import unicodedata

from django.db import migrations, models

_SPACES = re.compile(r"\s+")
LONGEST = 200


def title_key(title: str) -> str:
    decomposed = unicodedata.normalize("NFKD", str(title or ""))
    bare = "".join(char for char in decomposed if not unicodedata.combining(char))
    return _SPACES.sub(" ", bare.casefold()).strip()


def title_from_name(name: str) -> str:
    words = _SPACES.sub(" ", re.sub(r"[-_]+", " ", str(name or ""))).strip()
    return words[:1].upper() + words[1:]


def unique_title(title: str, *, name: str, taken: set[str]) -> str:
    """``title``, or with the criterion's name added, then a number, until no title taken has
    its key."""
    candidates = [title, f"{title[: LONGEST - len(name) - 3]} ({name})"]
    candidates += [f"{title[: LONGEST - len(name) - 10]} ({name}) {n}" for n in range(2, 1000)]
    return next(candidate for candidate in candidates if title_key(candidate) not in taken)


def give_titles(apps, schema_editor):
    Criterion = apps.get_model("annotation", "Criterion")
    taken: dict[int, set[str]] = {}
    rows = Criterion.objects.order_by("campaign_id", "-builtin", "id").values_list(
        "id", "campaign_id", "name", "title"
    )
    for pk, campaign_id, name, title in list(rows):
        keys = taken.setdefault(campaign_id, set())
        shown = _SPACES.sub(" ", title or "").strip()[:LONGEST]
        if not title_key(shown):
            shown = title_from_name(name)[:LONGEST] or "Criterion"
        shown = unique_title(shown, name=name, taken=keys)
        keys.add(title_key(shown))
        Criterion.objects.filter(pk=pk).update(title=shown, title_key=title_key(shown))


class Migration(migrations.Migration):
    dependencies = [("annotation", "0017_assignment_one_slot_per_person")]

    operations = [
        migrations.AddField(
            model_name="criterion",
            name="title_key",
            field=models.CharField(default="", editable=False, max_length=200),
            preserve_default=False,
        ),
        migrations.RunPython(give_titles, migrations.RunPython.noop),
    ]
