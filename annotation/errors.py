"""Refusals that name what was refused, so a form can put the message beside that field.

Their messages are translatable: a constant msgid (``gettext_lazy``) with named placeholders,
interpolated by :func:`refusal` only when the message is read. A page in French thus shows it in
French, a page in English and the command line (``LANGUAGE_CODE``, English) in English, and the
domain code that raises it never needs to know who will read it.
"""

from __future__ import annotations

import re
from typing import cast

from django.utils.functional import Promise, lazy


def _interpolated(message: str | Promise, params: dict[str, object]) -> str:
    return str(message) % params if params else str(message)


_lazy_interpolated = lazy(_interpolated, str)


def refusal(message: str | Promise, /, **params: object) -> Promise:
    """``message`` (a ``gettext_lazy`` msgid with ``%(name)s`` placeholders) filled with
    ``params``, translated into the language active when it is turned into text (``str``), not
    when it is built. Parameters that are lazy translations themselves follow the same language.
    """
    return cast(Promise, _lazy_interpolated(message, params))


class FieldError(ValueError):
    """A domain function refused one of its arguments: ``field`` is the argument's name (such as
    ``budget``, ``per_cluster`` or ``per_theme_budget``; None when no one argument is at fault),
    the message says why and starts with that name, as every refusal of the app does. A
    ValueError, so callers that catch those keep working; forms show it on their field of that
    name (``annotation.forms.add_domain_error``). The message may be a lazy translation
    (:func:`refusal`): ``str(error)`` speaks the active language.
    """

    def __init__(
        self,
        field: str | None,
        message: str | Promise,
        *,
        missing: bool = False,
        conflict: bool = False,
        unavailable: bool = False,
    ) -> None:
        super().__init__(message)
        self.field = field
        # What the refusal is about, for the API's status: an argument that names nothing that
        # exists (``missing``: 404), or one that clashes with what exists or with the state it
        # is in (``conflict``: a name taken, a run that has ended: 409), or a service it needs
        # that is busy for now and may answer in a moment (``unavailable``: 503, try again);
        # none: a malformed argument (400).
        self.missing, self.conflict, self.unavailable = missing, conflict, unavailable

    def __str__(self) -> str:
        return str(self.args[0])

    @property
    def reason(self) -> str:
        """The message without the field's name in front, for a place that already shows it."""
        message = str(self)
        if not self.field:
            return message
        # French puts a (non-breaking) space before the colon: "judge : ...".
        return re.sub(rf"^{re.escape(self.field)}[ \u00a0\u202f]?: ", "", message, count=1)
