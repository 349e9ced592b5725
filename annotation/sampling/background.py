"""Samples drawn in a worker: record a pending draw or top-up, then claim and compute it.

:func:`create_pending_sample` and :func:`schedule_top_up` record what is to be computed (the
caller, ``annotation.jobs``, enqueues the task after commit); :func:`run_sample`, called by the
task, claims the sample (pending, or stale running, -> running) and records done or failed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from annotation.errors import FieldError, refusal
from annotation.models import Criterion, Sample
from annotation.sampling.draws import FINISHED, Design, Progress, new_sample, plan_top_up, redraw
from annotation.sampling.staleness import stale

logger = logging.getLogger(__name__)

ERROR_MAX_CHARS = 2000


def create_pending_sample(
    *,
    criterion: Criterion,
    budget: int,
    seed: int = 0,
    per_cluster: int = 3,
    per_theme_budget: Mapping[str, int] | None = None,
    backend: str | None = None,
    user=None,
) -> Sample:
    """Validate a draw and record it as a pending sample (K per theme fixed now); draw nothing.

    Arguments and errors as in :func:`draw_sample`; :func:`run_sample` computes the items later.
    Nothing is written when it raises.
    """
    sample, _ = new_sample(
        criterion=criterion,
        budget=budget,
        seed=seed,
        per_cluster=per_cluster,
        per_theme_budget=per_theme_budget,
        backend=backend,
        user=user,
    )
    sample.save()
    return sample


def run_sample(*, sample_id: int) -> Sample:
    """Compute a pending sample (a first draw or a requested top-up) and return it.

    Claims the sample with a conditional update from pending, or from a stale running (see
    :func:`is_stale`: the run that claimed it died), to running; when the claim fails (the sample
    is running elsewhere, done or failed) nothing happens and the sample is returned as it is,
    so running this twice is safe. The draw uses the sample's own seed, backend, m and K per
    theme, and keeps every item it already has (see :func:`top_up_sample`). On success the items
    and status done are written in one transaction; on any error the status becomes failed with
    the error's text and the items stay as they were; a run whose claim was taken over meanwhile
    writes nothing. Raises Sample.DoesNotExist for an unknown id.
    """
    now = timezone.now()
    claimed = (
        Sample.objects.filter(pk=sample_id)
        .filter(Q(status=Sample.Status.PENDING) | (Q(status=Sample.Status.RUNNING) & stale(now)))
        .update(status=Sample.Status.RUNNING, status_since=now, progress=0.0, error="")
    )
    sample = Sample.objects.select_related("criterion").get(pk=sample_id)
    if not claimed:
        return sample
    mine = Q(pk=sample_id, status=Sample.Status.RUNNING, status_since=now)
    try:
        design = Design(
            budget=sample.budget, per_cluster=sample.per_cluster, k_per_theme=dict(sample.k_per_theme)
        )
        redraw(
            sample=sample,
            design=design,
            progress=_progress_writer(claim=mine),
            expected=(Sample.Status.RUNNING,),
            claim=now,
        )
    except Sample.DoesNotExist:
        raise
    except Exception as exc:
        # A failed draw must say why on the sample's page, whatever went wrong.
        logger.exception("sample %s failed", sample_id)
        Sample.objects.filter(mine).update(
            status=Sample.Status.FAILED, status_since=timezone.now(), error=_describe(exc)
        )
    sample.refresh_from_db()
    return sample


def samples_to_draw() -> list[int]:
    """The samples waiting for a worker: pending (their job may never have reached the broker)
    or running under a stale claim (its run died); their ids. Sending their draw again is safe:
    :func:`run_sample` claims a sample once."""
    now = timezone.now()
    waiting = Q(status=Sample.Status.PENDING) | (Q(status=Sample.Status.RUNNING) & stale(now))
    return list(Sample.objects.filter(waiting).order_by("pk").values_list("pk", flat=True))


def schedule_top_up(
    *,
    sample: Sample,
    budget: int | None = None,
    per_cluster: int | None = None,
    per_theme_budget: Mapping[str, int] | None = None,
) -> Sample:
    """Record a top-up on ``sample`` (status pending, new budget, m and K) for :func:`run_sample`
    to compute; the caller enqueues that (``annotation.jobs.request_top_up``).

    Arguments and rules as in :func:`top_up_sample`. The sample must be done or failed (a failed
    sample may be run again, with the same or new numbers). Raises ValueError naming the field
    on bad input or when the sample is pending or running; nothing is written then. Until the
    worker finishes, the items are those of the last successful draw.

    A stale sample (see :func:`is_stale`: its run died) counts as failed: without new numbers it
    is run again as it stands.
    """
    now = timezone.now()
    design = plan_top_up(
        sample=sample, budget=budget, per_cluster=per_cluster, per_theme_budget=per_theme_budget, now=now
    )
    active = Q(status__in=(Sample.Status.PENDING, Sample.Status.RUNNING)) & stale(now)
    claimed = Sample.objects.filter(Q(status__in=FINISHED) | active, pk=sample.pk).update(
        status=Sample.Status.PENDING,
        status_since=now,
        progress=0.0,
        error="",
        budget=design.budget,
        per_cluster=design.per_cluster,
        k_per_theme=design.k_per_theme,
    )
    if not claimed:
        raise FieldError(
            "sample",
            refusal(_("sample: %(sample)s is being drawn; top it up when it is finished"), sample=sample.pk),
        )
    sample.refresh_from_db()
    return sample


def _progress_writer(*, claim: Q) -> Progress:
    """A callback that records progress on the sample held by ``claim``, at most once per percent."""
    last = [0.0]

    def write(fraction: float) -> None:
        fraction = min(1.0, max(0.0, float(fraction)))
        if fraction - last[0] >= 0.01:
            last[0] = fraction
            Sample.objects.filter(claim).update(progress=fraction)

    return write


def _describe(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text[:ERROR_MAX_CHARS]
