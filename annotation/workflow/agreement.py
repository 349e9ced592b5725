"""Agreement between the humans: first label against the second look, per criterion and theme.

Review mode compares each unit's first label with its review; blind double mode compares the two
independent first labels. Only units with both labels in force count. For each group: number of
pairs, percent agreement, Cohen's kappa and the number of adjudications.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy

from annotation.models import AnnotationMode, Campaign, Criterion, Role, Unit
from annotation.workflow.state import ID_CHUNK, UnitState, unit_states
from inference.reliability.agreement import cohen_kappa

OVERALL = "All themes"
# Who may see agreement figures. Not annotators nor reviewers: on a small campaign, or right after
# completing a blind pair, a change in the figures tells them the other person's label.
AGREEMENT_ROLES = frozenset({Role.MANAGER, Role.ADJUDICATOR, Role.ANALYST})


def may_see_agreement(*, roles: set[str]) -> bool:
    """Whether someone holding ``roles`` in a campaign may see its human agreement figures."""
    return bool(roles.intersection(AGREEMENT_ROLES))


@dataclass(frozen=True)
class Agreement:
    """Agreement in one group of units (a theme, or all themes)."""

    theme: str
    pairs: int
    agreed: int
    kappa: float | None
    adjudications: int

    @property
    def percent(self) -> float | None:
        return 100.0 * self.agreed / self.pairs if self.pairs else None


@dataclass(frozen=True)
class CriterionAgreement:
    """Per-theme and overall agreement for one criterion; ``compared`` says which labels."""

    criterion: Criterion
    # Which labels are compared, in the reader's language when shown.
    compared: str | Promise
    themes: list[Agreement]
    overall: Agreement


def second_look(state: UnitState) -> tuple[int, int] | None:
    """The unit's first label and its second look (the review, or the other blind label), or
    None when it lacks either: the pair every agreement figure between people compares."""
    if state.mode == AnnotationMode.BLIND_DOUBLE:
        if len(state.first) >= 2:
            return state.first[0].value, state.first[1].value
        return None
    if state.first and state.review is not None:
        return state.first[-1].value, state.review.value
    return None


def _group(theme: str, pairs: list[tuple[int, int]], adjudications: int) -> Agreement:
    return Agreement(
        theme=theme,
        pairs=len(pairs),
        agreed=sum(a == b for a, b in pairs),
        kappa=cohen_kappa([a for a, _ in pairs], [b for _, b in pairs]),
        adjudications=adjudications,
    )


def human_agreement(*, criterion: Criterion) -> CriterionAgreement:
    """Agreement between first and second human labels of ``criterion``, per theme and overall.

    Counts every labelled unit of the criterion (whatever sample it came from); imported labels
    have no second look and do not count. Three queries (one more per 5,000 labelled units).
    """
    # Imported labels never come in pairs: leaving them out keeps this fast on imported campaigns.
    states = unit_states(criterion=criterion, human_only=True)
    themes: dict[int, str] = {}
    ids = sorted(states)
    for start in range(0, len(ids), ID_CHUNK):
        chunk = ids[start : start + ID_CHUNK]
        themes.update(Unit.objects.filter(pk__in=chunk).values_list("pk", "theme"))
    pairs: dict[str, list[tuple[int, int]]] = defaultdict(list)
    adjudicated: dict[str, int] = defaultdict(int)
    for unit_id, state in states.items():
        theme = themes.get(unit_id, "")
        if (pair := second_look(state)) is not None:
            pairs[theme].append(pair)
        if state.adjudication is not None:
            adjudicated[theme] += 1
    names = sorted(set(pairs) | set(adjudicated))
    blind = criterion.campaign.annotation_mode == AnnotationMode.BLIND_DOUBLE
    return CriterionAgreement(
        criterion=criterion,
        compared=gettext_lazy("first vs second blind label")
        if blind
        else gettext_lazy("first label vs review"),
        themes=[_group(theme, pairs[theme], adjudicated[theme]) for theme in names],
        overall=_group(OVERALL, [p for theme in names for p in pairs[theme]], sum(adjudicated.values())),
    )


def campaign_agreement(*, campaign: Campaign) -> list[CriterionAgreement]:
    """:func:`human_agreement` for every criterion of the campaign, by criterion name."""
    results = []
    for criterion in campaign.criteria.order_by("name"):
        criterion.campaign = campaign
        results.append(human_agreement(criterion=criterion))
    return results
