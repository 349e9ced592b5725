"""The analyst's heavy pages computed ahead of their first visit, by a worker.

What a page keeps in the page cache (``evaluation.page_cache``) is computed on the first visit after
what it reads changed: at a million answers that visit waited 10 to 35 seconds (the automatic
metrics, the answers against their reference answers, evidence, a citation report's ALCE measures,
the versions compared by question; stability 20 s profiled, 6 minutes before its width curve read
each draw once). After an import, a judge run and a recomputation of the estimates, a worker
computes them instead (``warm_campaign``), at the parameters a page opens with: its form read with
no parameter, as the page reads the first visit's address. The figures land under the keys the pages
read, so the first visit finds them.

Only where that helps: the worker must fill the cache the web processes read (``CACHE_URL``,
Redis in production; local memory is each process's own), or run in the process itself (tasks run
eagerly). ``PAGE_WARMING=0`` turns it off.
"""

from __future__ import annotations

from collections.abc import Iterable

from celery import current_app
from django.conf import settings
from django.http import QueryDict
from django.utils import translation

from annotation.criteria.categories import is_categorical
from annotation.models import Campaign, Criterion
from evaluation.errors import EstimateError
from evaluation.estimates import judge_choice, planning
from evaluation.forms.measures import EvidenceForm, ReferenceForm, StabilityForm
from evaluation.forms.reports import ReportForm
from evaluation.measures import calibration, comparison, evidence, reference_answers, stability
from evaluation.models import Judge
from evaluation.pages.overview import automatic_metrics_sections
from evaluation.pages.stability import questions_table
from evaluation.reports import read

LOCAL_MEMORY = "django.core.cache.backends.locmem.LocMemCache"


def enabled() -> bool:
    """Whether a worker's computation reaches the pages: warming on, and the cache shared with
    the web processes or the tasks run in the caller's process."""
    shared = settings.CACHES["default"]["BACKEND"] != LOCAL_MEMORY
    return settings.PAGE_WARMING and (shared or bool(current_app.conf.task_always_eager))


def _first_visit() -> QueryDict:
    """A page's parameters on its first visit: none."""
    return QueryDict()


def warm_campaign(*, campaign: Campaign, criteria: Iterable[Criterion] | None = None) -> list[str]:
    """Compute into the page cache what the first visit of each heavy page of ``campaign`` would
    compute, at its default parameters: the campaign's automatic metrics, its answers against
    their reference answers, evidence, stability, and per criterion (``criteria``; all of the
    campaign's by default) its report's figures read besides the snapshot (a citation report's
    ALCE measures, the planner), the judge's calibration and the estimates the versions are
    compared by. What is already kept costs its key's queries only. The names warmed, in order;
    a page whose parameters its defaults make invalid (no judge yet) is left to its visit."""
    warmed: list[str] = []
    automatic_metrics_sections(campaign=campaign)
    warmed.append("metrics")
    reference = ReferenceForm(_first_visit())
    if reference.is_valid():
        data = reference.cleaned_data
        reference_answers.reference_report(
            campaign=campaign, normalisation=data["normalisation"], alpha=data["alpha"]
        )
        warmed.append("reference answers")
    _warm_evidence(campaign, warmed)
    _warm_stability(campaign, warmed)
    # What the versions are compared by besides the estimates (the compare page, the report's
    # section on the previous version).
    comparison.metric_estimates(campaign=campaign)
    reference_answers.reference_linears(campaign=campaign)
    warmed.append("versions' metrics")
    chosen = list(campaign.criteria.order_by("name") if criteria is None else criteria)
    for criterion in chosen:
        criterion.campaign = campaign
        _warm_criterion(criterion, warmed)
    return warmed


def _warm_evidence(campaign: Campaign, warmed: list[str]) -> None:
    form = EvidenceForm(_first_visit(), criteria=evidence.answer_criteria(campaign=campaign), candidates=[])
    if not form.is_valid():
        return
    try:
        evidence.evidence_report(campaign=campaign, **form.report_arguments(), cached=True)
    except evidence.EvidenceError:
        return
    warmed.append("evidence")


def _warm_stability(campaign: Campaign, warmed: list[str]) -> None:
    form = StabilityForm(_first_visit(), criteria=list(campaign.criteria.order_by("name")))
    form.is_valid()
    figures = form.figures(campaign=campaign)
    if figures is None:
        return
    key = stability.stability_key(figures)
    result = stability.cached_stability(figures, key=key)
    if key is not None:
        for language, _name in settings.LANGUAGES:
            with translation.override(language):
                questions_table(result=result, key=key)
    warmed.append("stability")


def _warm_criterion(criterion: Criterion, warmed: list[str]) -> None:
    judges = judge_choice.candidates(criterion=criterion)
    form = ReportForm(_first_visit(), criterion=criterion, judges=judges)
    valid = form.is_valid()
    params = form.params()
    if not valid or params.request is None:
        return
    request = params.request
    try:
        shown = read.read_report(request)
    except EstimateError:
        return
    if is_categorical(criterion):
        warmed.append(f"report {criterion.name}")
        return
    planning.report_planner(report=shown.binary, target_halfwidth=params.target, alpha=request.alpha)
    if request.judge.kind != Judge.Kind.IMPORTED:
        calibration.judge_calibration(criterion=criterion, judge=request.judge)
    comparison.version_estimates(
        criterion=criterion, judge=request.judge, method=request.method, alpha=request.alpha
    )
    warmed.append(f"report {criterion.name}")
