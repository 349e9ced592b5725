"""Starting the annotation app's background jobs; enqueued after the transaction commits.

The domain functions (``annotation.sampling.background``) record what is to be computed; this module hands
it to the workers (``annotation.tasks``), so the import graph runs one way:
jobs -> tasks -> sampling.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.db import transaction

from annotation import broker
from annotation.models import Criterion, Sample
from annotation.sampling.background import create_pending_sample, schedule_top_up
from annotation.tasks import draw_sample_task


def request_sample(
    *,
    criterion: Criterion,
    budget: int,
    seed: int = 0,
    per_cluster: int = 3,
    per_theme_budget: Mapping[str, int] | None = None,
    backend: str | None = None,
    user=None,
) -> Sample:
    """Create a pending sample and enqueue its draw once the transaction commits; return it.

    Arguments and errors as in :func:`annotation.sampling.background.create_pending_sample`.
    """
    with transaction.atomic():
        sample = create_pending_sample(
            criterion=criterion,
            budget=budget,
            seed=seed,
            per_cluster=per_cluster,
            per_theme_budget=per_theme_budget,
            backend=backend,
            user=user,
        )
        broker.send_on_commit(draw_sample_task, sample.pk)
    return sample


def request_top_up(
    *,
    sample: Sample,
    budget: int | None = None,
    per_cluster: int | None = None,
    per_theme_budget: Mapping[str, int] | None = None,
) -> Sample:
    """Record a top-up on ``sample`` and enqueue it once the transaction commits; return it.

    Arguments, rules and errors as in :func:`annotation.sampling.background.schedule_top_up`.
    """
    with transaction.atomic():
        sample = schedule_top_up(
            sample=sample, budget=budget, per_cluster=per_cluster, per_theme_budget=per_theme_budget
        )
        broker.send_on_commit(draw_sample_task, sample.pk)
    return sample
