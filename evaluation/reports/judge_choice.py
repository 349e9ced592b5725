"""Which judge a report reads: the one named, else the one rule of the command, the pages and the
API (:func:`pick_default_judge`), among the judges able to label the criterion
(:func:`able_judges`). A name that is not a judge, no judge, or a choice that would be a guess
(several judges run in the app) is refused with a message naming the judges.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from annotation.criteria.categories import is_categorical
from annotation.errors import refusal
from annotation.models import Campaign, Criterion
from evaluation.errors import EstimateError
from evaluation.models import Judge


def pick_default_judge(judges: Sequence[Judge]) -> Judge | None:
    """The judge a report reads when none is named, the one rule of the command and the pages:
    the only judge run in the app (an LLM or the lexical judge), else the imported judge when it
    is the only judge. None when there is no judge, or when several were run in the app: then
    the choice is the reader's, never a guess."""
    running = [judge for judge in judges if judge.kind != Judge.Kind.IMPORTED]
    if len(running) == 1:
        return running[0]
    if not running and len(judges) == 1:
        return judges[0]
    return None


def choose_judge(*, judges: Sequence[Judge], name: str = "") -> Judge | None:
    """The judge named ``name`` among ``judges``, or :func:`pick_default_judge`'s choice when no
    name is given (None when there is none to pick). EstimateError on field ``judge``, naming the
    judges, when the name is not one of them."""
    if not name:
        return pick_default_judge(judges)
    for judge in judges:
        if judge.name == name:
            return judge
    raise EstimateError(
        refusal(
            _("%(name)s is not a judge of this campaign (judges: %(judges)s)"),
            name=repr(name),
            judges=_judge_names(judges),
        ),
        field="judge",
    )


def _judge_names(judges: Sequence[Judge]) -> str | Promise:
    return ", ".join(judge.name for judge in judges) or _("none")


def able_judges(*, criterion: Criterion, judges: Sequence[Judge]) -> list[Judge]:
    """The judges among ``judges`` that can label ``criterion``: all of them, but the offline
    lexical judge (0 or 1 only) for a criterion with categories."""
    if is_categorical(criterion):
        return [judge for judge in judges if judge.kind != Judge.Kind.LEXICAL]
    return list(judges)


def default_judge(
    *, campaign: Campaign, name: str | None = None, criterion: Criterion | None = None
) -> Judge:
    """The named judge, or :func:`pick_default_judge`'s choice (among the judges able to label
    ``criterion``, when given: :func:`able_judges`). Raises EstimateError naming the judges when
    the name is unknown, when there is no judge, or when the choice is ambiguous."""
    judges = list(Judge.objects.filter(campaign=campaign).order_by("name"))
    if criterion is not None:
        judges = able_judges(criterion=criterion, judges=judges)
    names = _judge_names(judges)
    if name:
        for judge in judges:
            if judge.name == name:
                return judge
        raise EstimateError(
            refusal(
                _("judge %(judge)s does not exist in %(campaign)s (judges: %(judges)s)"),
                judge=repr(name),
                campaign=repr(campaign.name),
                judges=names,
            )
        )
    if not judges:
        raise EstimateError(
            refusal(_("campaign %(campaign)s has no judge yet"), campaign=repr(campaign.name))
        )
    chosen = pick_default_judge(judges)
    if chosen is None:
        raise EstimateError(
            refusal(
                _("campaign %(campaign)s has several judges; pick one with --judge: %(judges)s"),
                campaign=repr(campaign.name),
                judges=names,
            )
        )
    return chosen
