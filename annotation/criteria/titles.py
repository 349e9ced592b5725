"""A criterion's title: what people read wherever the criterion is named (its slug, ``name``, is
what URLs, files, commands and the API name it by).

Every criterion has one, and two criteria of a campaign never share one, whatever their case or
accents: "Complétude" and "completude" are the same title. The database holds that rule on
``Criterion.title_key``, the title folded by :func:`title_key`. How a title is shown in the
reader's language is ``annotation.workbench.shown_title``'s decision, not this module's.

No Django here: the model imports it.
"""

from __future__ import annotations

import re
import unicodedata

_SPACES = re.compile(r"\s+")


def title_key(title: str) -> str:
    """The title folded for comparison: accents dropped, case folded, spaces collapsed and
    trimmed. Two titles clash when their keys are equal; a blank title's key is empty."""
    decomposed = unicodedata.normalize("NFKD", str(title or ""))
    bare = "".join(char for char in decomposed if not unicodedata.combining(char))
    return _SPACES.sub(" ", bare.casefold()).strip()


def title_from_name(name: str) -> str:
    """A title made from a criterion's slug, for one that has none: ``tone_b`` -> "Tone b"."""
    words = _SPACES.sub(" ", re.sub(r"[-_]+", " ", str(name or ""))).strip()
    return words[:1].upper() + words[1:]
