"""The protocol's rules: which stages a mode has, how many label slots a stage holds, who may work.

Review mode: one first label, one review (confirm or override), one adjudication when the review
overrode. Blind double mode: two first labels by two different people, one adjudication when
they differ. Each stage needs its role; one person never works on two stages of a unit, nor on
both first-stage slots of a blind unit.
"""

from __future__ import annotations

from collections.abc import Collection

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.utils.functional import Promise, lazy
from django.utils.translation import gettext_lazy as _

from annotation.access import roles_of
from annotation.criteria.categories import CategoryError, is_categorical
from annotation.criteria.categories import check_value as check_category_value
from annotation.errors import refusal
from annotation.models import AnnotationMode, Campaign, Criterion, Role, Stage

STAGE_ROLE: dict[str, str] = {
    Stage.LABEL: Role.ANNOTATOR,
    Stage.REVIEW: Role.REVIEWER,
    Stage.ADJUDICATION: Role.ADJUDICATOR,
}
MODE_STAGES: dict[str, tuple[str, ...]] = {
    AnnotationMode.REVIEW: (Stage.LABEL, Stage.REVIEW, Stage.ADJUDICATION),
    AnnotationMode.BLIND_DOUBLE: (Stage.LABEL, Stage.ADJUDICATION),
}
VALUES = (0, 1)
REQUEST_KEY_MAX = 64


class WorkflowError(Exception):
    """A request the protocol refuses; ``code`` says which rule, the message says it to a person."""

    def __init__(self, message: str | Promise, *, code: str) -> None:
        # A lazy translation (annotation.errors.refusal): str(error) speaks the active language.
        super().__init__(message)
        self.code = code

    def __str__(self) -> str:
        return str(self.args[0])


_lowered = lazy(lambda text: str(text).lower(), str)


def stages_for(*, mode: str) -> tuple[str, ...]:
    """The stages of ``mode`` in order (label, [review,] adjudication)."""
    return MODE_STAGES[mode]


def capacity(*, mode: str, stage: str) -> int:
    """How many people label a unit at ``stage``: 2 for the first stage in blind double mode, else 1."""
    return 2 if mode == AnnotationMode.BLIND_DOUBLE and stage == Stage.LABEL else 1


def later_stages(*, mode: str, stage: str) -> tuple[str, ...]:
    """The stages of ``mode`` that build on ``stage``'s labels."""
    stages = stages_for(mode=mode)
    return stages[stages.index(stage) + 1 :]


def check_stage(*, campaign: Campaign, stage: str) -> None:
    """Raise WorkflowError (code ``stage``) unless ``stage`` is a working stage of the campaign's mode."""
    if stage not in MODE_STAGES.get(campaign.annotation_mode, ()):
        mode = dict(AnnotationMode.choices).get(campaign.annotation_mode, campaign.annotation_mode)
        raise WorkflowError(
            refusal(_("%(stage)s is not a stage of %(mode)s"), stage=repr(stage), mode=_lowered(mode)),
            code="stage",
        )


def require_stage_role(
    *,
    user: User | AnonymousUser,
    campaign: Campaign,
    stage: str,
    roles: Collection[str] | None = None,
) -> None:
    """Check the stage exists in the campaign's mode and the user holds its role.

    ``roles``: roles of the user in the campaign that the caller read in this same request (a
    view checks them on every request); None reads them from the database. Raises WorkflowError
    for an unknown stage and PermissionDenied when the role is missing.
    """
    check_stage(campaign=campaign, stage=stage)
    held = roles_of(user=user, campaign=campaign) if roles is None else roles
    if STAGE_ROLE[stage] not in held:
        raise PermissionDenied(f"The {stage} stage needs the {STAGE_ROLE[stage]} role in this campaign.")


def check_value(value: object, *, criterion: Criterion | None = None) -> int:
    """``value`` as a label: 0 or 1, or one of the category values of a categorical
    ``criterion``; WorkflowError (code ``value``) for anything else, booleans too."""
    if criterion is not None and is_categorical(criterion):
        try:
            return check_category_value(criterion=criterion, value=value)
        except CategoryError as error:
            raise WorkflowError(error.args[0], code="value") from None
    if isinstance(value, bool) or value not in VALUES:
        raise WorkflowError(refusal(_("a label is 0 or 1, not %(value)s"), value=repr(value)), code="value")
    return int(value)  # type: ignore[call-overload]


def check_request_key(request_key: str | None) -> str | None:
    """The key stripped (None when blank); WorkflowError (code ``request_key``) when too long."""
    key = (request_key or "").strip()
    if len(key) > REQUEST_KEY_MAX:
        raise WorkflowError(
            refusal(_("a request key has at most %(count)s characters"), count=REQUEST_KEY_MAX),
            code="request_key",
        )
    return key or None
