"""The design that draws the planner's shares: for a judge the plan runs on a share of a theme's
answers, a Poisson draw of whole answers (each answer of the theme drawn independently with the
theme's probability q, seeded), every unit of a drawn answer recorded with its inclusion
probability q (``JudgeShare`` and its items). The estimate that combines several judges then
takes the judge's term over its share by inverse probability (``evaluation.estimates.multi_judge``).

One share per judge and criterion: a second draw would make the first's probabilities wrong, so
it is refused. Two judges' shares are drawn independently (each its own seed, from the one given
and the judge's id), as the combination's pool weights assume.

``draw_planned`` is the planner page's button (``evaluation.jobs.draw_shares_and_run`` starts the
runs it names): for each judge the cheapest plan uses in a theme
it has not judged whole, it draws the judge's share when the plan runs it on part of a theme (its
themes at 1 drawn whole with it) and starts the judge on its share (scope ``share``: the share's
units and the labelled ones), or, at share 1 everywhere, on the units it has not judged yet
(scope ``missing``). A judge that judged every unit of the themes it is used in is left as it is
(an imported judge can only be so: the planner leaves out one that has not).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from django.db import IntegrityError, transaction
from django.utils.translation import gettext_lazy as _

from annotation.errors import refusal
from annotation.models import Criterion, Unit
from evaluation.designs.judge_plan import JudgePlan
from evaluation.errors import EstimateError
from evaluation.models import Judge, JudgeRun, JudgeShare, JudgeShareItem


def _already_drawn(*, judge: Judge, criterion: Criterion) -> EstimateError:
    return EstimateError(
        refusal(
            _(
                "judge %(judge)s already has a drawn share of %(criterion)s: a second draw would make "
                "the first one's probabilities wrong"
            ),
            judge=repr(judge.name),
            criterion=repr(criterion.name),
        ),
        field="judge",
        conflict=True,
    )


def share_seed(*, seed: int, judge: Judge) -> int:
    """The seed of ``judge``'s share, from the draw's ``seed`` and the judge's id."""
    return int(np.random.SeedSequence([seed, judge.pk]).generate_state(1, dtype=np.uint32)[0])


def draw_share(
    *, criterion: Criterion, judge: Judge, shares: Mapping[str, float], seed: int, user=None
) -> JudgeShare:
    """Draw ``judge``'s share of ``criterion``: in each theme of ``shares`` (theme -> q, 0 < q <=
    1) every answer independently with probability q (``numpy``'s generator seeded by ``seed``,
    themes in name order, answers by id), every unit of a drawn answer recorded with q. Refuses
    (EstimateError) a second share of the judge on the criterion, a judge of another campaign and
    a probability outside (0, 1]."""
    if judge.campaign_id != criterion.campaign_id:
        raise EstimateError(_("the judge and the criterion belong to different campaigns"), field="judge")
    if any(not (0 < q <= 1) for q in shares.values()):
        raise EstimateError(_("a share's probability must lie in (0, 1]"), field="shares")
    if JudgeShare.objects.filter(judge=judge, criterion=criterion).exists():
        raise _already_drawn(judge=judge, criterion=criterion)
    answers: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for unit_id, theme, answer_id in (
        Unit.objects.filter(campaign_id=criterion.campaign_id, level=criterion.level, theme__in=list(shares))
        .order_by("answer_id", "id")
        .values_list("id", "theme", "answer_id")
    ):
        answers[theme][answer_id].append(unit_id)
    rng = np.random.default_rng(seed)
    items: list[tuple[int, float]] = []
    for theme in sorted(shares):
        q = float(shares[theme])
        ids = sorted(answers[theme])
        drawn = rng.random(len(ids)) < q
        items += [
            (unit_id, q)
            for answer_id, hit in zip(ids, drawn, strict=True)
            if hit
            for unit_id in answers[theme][answer_id]
        ]
    try:
        with transaction.atomic():
            share = JudgeShare.objects.create(
                campaign_id=criterion.campaign_id,
                criterion=criterion,
                judge=judge,
                seed=seed,
                shares={theme: float(q) for theme, q in sorted(shares.items())},
                created_by=user,
            )
            JudgeShareItem.objects.bulk_create(
                [JudgeShareItem(share=share, unit_id=unit_id, probability=q) for unit_id, q in items],
                batch_size=2000,
            )
    except IntegrityError:
        raise _already_drawn(judge=judge, criterion=criterion) from None
    return share


@dataclass(frozen=True)
class Drawn:
    """What the planner's button draws: the shares, and each judge to run with its scope."""

    shares: list[JudgeShare]
    runs: list[tuple[Judge, str]]


def draw_planned(*, plan: JudgePlan, seed: int, user=None) -> Drawn:
    """Draw the share of each judge the plan runs on part of a theme it has not judged whole, and
    say which judges to run, with which scope (see the module; ``evaluation.jobs.
    draw_shares_and_run`` starts them in the same transaction). Refuses (EstimateError) when the
    plan runs no judge, or when a judge to draw for has a share already; nothing is drawn then."""
    todo: list[tuple[Judge, dict[str, float]]] = []
    for k, judge in enumerate(plan.judges):
        whole = {row.theme for row in plan.planned if row.whole[k]}
        rest = {theme: q for theme, q in plan.shares_of(judge).items() if theme not in whole}
        if rest:
            todo.append((judge, rest))
    if not todo:
        raise EstimateError(
            _("the plan runs no judge on units it has not judged yet: there is nothing to draw or run"),
            conflict=True,
        )
    for judge, shares in todo:
        if (
            any(q < 1 for q in shares.values())
            and JudgeShare.objects.filter(judge=judge, criterion=plan.criterion).exists()
        ):
            raise _already_drawn(judge=judge, criterion=plan.criterion)
    drawn: list[JudgeShare] = []
    runs: list[tuple[Judge, str]] = []
    with transaction.atomic():
        for judge, shares in todo:
            partial = any(q < 1 for q in shares.values())
            if partial:
                drawn.append(
                    draw_share(
                        criterion=plan.criterion,
                        judge=judge,
                        shares=shares,
                        seed=share_seed(seed=seed, judge=judge),
                        user=user,
                    )
                )
            runs.append((judge, JudgeRun.Scope.SHARE if partial else JudgeRun.Scope.MISSING))
    return Drawn(shares=drawn, runs=runs)
