"""What a text that comes in may hold: the one rule on control characters.

Texts written by other programs (an import file in any format, the API's bodies, a judge's
reply) keep their tabs and line breaks; a form feed or a vertical tab (a page or column break
of a PDF's extraction) becomes a line break; every other control character of U+0000-U+001F
and U+007F, NUL included, is removed. None of them is visible or means anything in a question,
an answer or a source, PostgreSQL refuses NUL in a text, and the unit page marks the sentence
it highlights with two of them (``annotation.templatetags.answer_text``). A form, which a
person fills in, refuses a NUL naming its field (Django's own check) and never reaches this.
docs/import-format.md says it for the files.
"""

from __future__ import annotations

import re

# Every C0 control but tab, line feed, carriage return, vertical tab and form feed; and DEL.
_REMOVED = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_BREAKS = re.compile(r"[\x0b\x0c]")


def clean_text(text: str) -> str:
    """``text`` under the rule: form feeds and vertical tabs as line breaks, the other control
    characters (tab, line feed and carriage return kept) removed."""
    if text.isprintable():  # the common case, at C speed: no control character at all
        return text
    return _REMOVED.sub("", _BREAKS.sub("\n", text))


def clean_value(value: object, *, depth: int = 32) -> object:
    """``value`` (decoded JSON: a text, a number, a list or an object) with every text in it,
    keys included, under the rule; below ``depth`` levels it is left as it is (an import refuses
    a record nested that deeply anyway)."""
    if isinstance(value, str):
        return clean_text(value)
    if depth == 0:
        return value
    if isinstance(value, dict):
        return {
            clean_text(k) if isinstance(k, str) else k: clean_value(v, depth=depth - 1)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [clean_value(item, depth=depth - 1) for item in value]
    return value
