"""The refusals of the evaluation app: a request that cannot be estimated or compared, with the
field at fault, so that a form, a command or the API places the message beside it."""

from __future__ import annotations

from django.utils.functional import Promise
from django.utils.text import format_lazy

from annotation.errors import FieldError


class EstimateError(FieldError):
    """The request cannot be estimated (unknown method, bad alpha, judge of another campaign).

    ``field`` names the parameter at fault when there is one (``method``, ``alpha``, ``judge``),
    so that a form or a command can place ``message`` (the ``reason``); the text of the error
    starts with it.
    """

    def __init__(
        self,
        message: str | Promise,
        *,
        field: str | None = None,
        missing: bool = False,
        conflict: bool = False,
    ) -> None:
        # The message may be a lazy translation (annotation.errors.refusal): kept lazy here.
        # ``missing``: ``field`` names a campaign, criterion, judge or theme that does not exist;
        # ``conflict``: it asks what the campaign's data cannot give yet (FieldError).
        super().__init__(
            field,
            format_lazy("{}: {}", field, message) if field else message,
            missing=missing,
            conflict=conflict,
        )

    @property
    def message(self) -> str:
        return self.reason


class ComparisonError(EstimateError):
    """The versions cannot be compared by question; ``field`` names the option at fault
    (``campaign``, ``other``, ``criterion``, ``judge``, ``alpha``, ``method``)."""
