"""Judge runs: their life from creation to the end, the public face of the judge's work.

A run is criterion x judge x scope (all, missing, failed, or share: the judge's drawn share and
the labelled units), split into one batch per answer (one prompt carries all the answer's
sentences, so the sources are sent once). It is created with its
batches, worked through by ``evaluation.judge.scheduler`` (in Celery tasks, or here with
``run_inline``), cancelled and resumed; batches left claimed by dead workers are returned by
``evaluation.judge.claims``. Only one run of a judge on a criterion is active at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, F, OuterRef, Q, Window
from django.db.models.functions import RowNumber
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from annotation.criteria.categories import is_categorical
from annotation.errors import FieldError, refusal
from annotation.models import Campaign, Criterion, Label, SampleItem, Unit
from evaluation.judge import bindings, confidence, prompts
from evaluation.judge.accounting import sync_counters
from evaluation.judge.claims import recover_run
from evaluation.judge.imported import IMPORTED
from evaluation.judge.scheduler import process_batches
from evaluation.models import Judge, JudgeBatch, JudgeRun, JudgeShare, JudgeShareItem, Judgment

LEXICAL = "lexical"
IMPORTED_CANNOT_RUN = _("judge 'imported' holds imported labels and cannot be run")


def _already_active(*, judge: str, criterion: str) -> Promise:
    return refusal(
        _("judge %(judge)s already has an active run on %(criterion)s"),
        judge=repr(judge),
        criterion=repr(criterion),
    )


# The most threads a run may judge with at once, and the largest token budget (the database's
# big integer): larger values are refused on their field.
MAX_CONCURRENCY = 64
MAX_TOKENS = 2**63 - 1


class RunError(FieldError):
    """A run cannot be created or changed as asked (the message says why; ``field`` names the
    argument at fault when one is)."""

    def __init__(
        self,
        message: str | Promise,
        *,
        field: str | None = None,
        conflict: bool = False,
        unavailable: bool = False,
    ) -> None:
        # ``conflict``: refused because of the state the run or the judge's server is in (ended,
        # running; no key, the key refused), not its arguments; ``unavailable``: the judge's
        # server is busy for now (FieldError).
        super().__init__(field, message, conflict=conflict, unavailable=unavailable)


def get_or_create_judge(
    *,
    campaign: Campaign,
    name: str,
    model: str | None = None,
    prompt_version: str | None = None,
    language: str | None = None,
    base_url: str | None = None,
    confidence_source: str | None = None,
    confidence_samples: int | None = None,
    check: Callable[[Judge], None] | None = None,
) -> Judge:
    """The campaign's judge called ``name``, created on first use.

    ``check`` is called with the judge, existing or about to be made (not saved yet), once the
    arguments are found consistent with it, and may refuse it by raising (``evaluation.judge.
    preflight.check_judge``: a server that cannot serve it): a judge refused so is not created,
    and the same name may then be asked for with another model.

    ``confidence_source`` and ``confidence_samples``: where an LLM judge's confidence in each
    verdict comes from (``evaluation.judge.confidence``; ``logprobs`` when not given), fixed at
    creation like the model: asking an existing judge for another source is refused.

    ``lexical`` is the built-in offline judge. Any other name is an OpenAI-compatible judge whose
    model defaults to ``OPENAI_JUDGE_MODEL``. An existing judge keeps its model and prompt
    version: asking for different ones is an error, since mixing them would corrupt comparisons.
    """
    if name == IMPORTED:
        raise RunError(IMPORTED_CANNOT_RUN)
    if prompt_version is not None:
        try:
            prompts.check_version(prompt_version)
        except ValueError:
            raise RunError(
                refusal(
                    _("prompt version %(version)s is unknown; known versions: %(known)s"),
                    version=repr(prompt_version),
                    known=", ".join(prompts.PROMPT_VERSIONS),
                )
            ) from None
    kind = Judge.Kind.LEXICAL if name == LEXICAL else Judge.Kind.OPENAI
    defaults = {
        "kind": kind,
        "model": "" if kind == Judge.Kind.LEXICAL else (model or settings.OPENAI_JUDGE_MODEL),
        "prompt_version": prompt_version or prompts.PROMPT_VERSION,
        "language": language or campaign.expected_language or "fr",
        "settings": {
            **({"base_url": base_url} if base_url else {}),
            **({"confidence": confidence_source} if confidence_source and kind == Judge.Kind.OPENAI else {}),
            **({"confidence_samples": confidence_samples} if confidence_samples else {}),
        },
    }
    if confidence_source is not None and confidence_source not in confidence.MODES:
        raise RunError(
            refusal(
                _("confidence source %(source)s is unknown; known sources: %(known)s"),
                source=repr(confidence_source),
                known=", ".join(confidence.MODES),
            )
        )
    existing = Judge.objects.filter(campaign=campaign, name=name).first()
    if existing is None and check is not None:
        check(Judge(campaign=campaign, name=name, **defaults))
    judge, created = (
        (existing, False)
        if existing is not None
        else Judge.objects.get_or_create(campaign=campaign, name=name, defaults=defaults)
    )
    if not created:
        if model and judge.model != model:
            raise RunError(
                refusal(
                    _("judge %(judge)s uses model %(model)s; create a judge with another name"),
                    judge=repr(name),
                    model=repr(judge.model),
                )
            )
        if (
            confidence_source
            and judge.kind == Judge.Kind.OPENAI
            and confidence.mode_of(judge.settings) != confidence_source
        ):
            raise RunError(
                refusal(
                    _("judge %(judge)s's confidence comes from %(source)s; create a judge with another name"),
                    judge=repr(name),
                    source=confidence.mode_of(judge.settings),
                )
            )
        if prompt_version and judge.prompt_version != prompt_version:
            raise RunError(
                refusal(
                    _("judge %(judge)s uses prompt version %(version)s; create a judge with another name"),
                    judge=repr(name),
                    version=repr(judge.prompt_version),
                )
            )
        if existing is not None and check is not None:
            check(judge)
    return judge


def _check_prompt(*, judge: Judge, criterion: Criterion) -> None:
    """Bind the judge to its prompt for the criterion, or refuse (RunError) when it changed."""
    try:
        bindings.bind(judge=judge, criterion=criterion)
    except bindings.PromptChanged as exc:
        raise RunError(exc.args[0]) from None
    except prompts.MissingPrompt as exc:
        raise RunError(str(exc)) from None


def _units_in_scope(*, criterion: Criterion, judge: Judge, scope: str):
    units = Unit.objects.filter(campaign_id=criterion.campaign_id, level=criterion.level)
    judged = Judgment.objects.filter(unit=OuterRef("pk"), criterion=criterion, judge=judge)
    if scope == JudgeRun.Scope.MISSING:
        units = units.filter(~Exists(judged.filter(status=Judgment.Status.OK)))
    elif scope == JudgeRun.Scope.FAILED:
        units = units.filter(Exists(judged.filter(status=Judgment.Status.FAILED)))
    elif scope == JudgeRun.Scope.SHARE:
        # The share's units, and in the share's themes those people labelled or were given to
        # label: the combination of several judges needs every judge's label on the labelled
        # units too. A theme outside the share is one the plan does not run the judge in.
        share = JudgeShare.objects.filter(judge=judge, criterion=criterion).first()
        if share is None:
            raise RunError(
                refusal(
                    _("judge %(judge)s has no drawn share of %(criterion)s: draw one on the planner's page"),
                    judge=repr(judge.name),
                    criterion=repr(criterion.name),
                ),
                field="scope",
            )
        drawn = JudgeShareItem.objects.filter(share=share, unit=OuterRef("pk"))
        labelled = Label.objects.filter(criterion=criterion, unit=OuterRef("pk"))
        sampled = SampleItem.objects.filter(sample__criterion=criterion, unit=OuterRef("pk"))
        in_themes = Q(theme__in=list(share.shares))
        units = units.filter(Exists(drawn) | (in_themes & (Exists(labelled) | Exists(sampled)))).filter(
            ~Exists(judged.filter(status=Judgment.Status.OK))
        )
    elif scope != JudgeRun.Scope.ALL:
        raise RunError(
            refusal(_("scope: %(scope)s is not one of all, missing, failed, share"), scope=repr(scope)),
            field="scope",
        )
    return units


def _check_limits(*, concurrency: int | None = None, token_budget: int | None = None) -> None:
    if concurrency is not None and not 1 <= concurrency <= MAX_CONCURRENCY:
        raise RunError(
            refusal(_("concurrency: give a whole number from 1 to %(max)s"), max=MAX_CONCURRENCY),
            field="concurrency",
        )
    if token_budget is not None and not 1 <= token_budget <= MAX_TOKENS:
        raise RunError(
            refusal(_("token_budget: give a whole number from 1 to %(max)s"), max=MAX_TOKENS),
            field="token_budget",
        )


@transaction.atomic
def create_run(
    *,
    criterion: Criterion,
    judge: Judge,
    scope: str = JudgeRun.Scope.ALL,
    concurrency: int | None = None,
    token_budget: int | None = None,
    user=None,
) -> JudgeRun:
    """A new run of ``judge`` over the units of ``criterion`` in ``scope``, with its batches.

    Refuses a second active run of the same judge and criterion (they would race for the same
    units; a unique constraint on active runs settles two requests that arrive together), a
    judge of another campaign, and an LLM judge whose prompt for the criterion would differ from
    the one it is bound to (see ``evaluation.judge.bindings``), and the lexical judge on a
    categorical criterion (it only tells 0 from 1).
    """
    _check_limits(concurrency=concurrency, token_budget=token_budget)
    if judge.campaign_id != criterion.campaign_id:
        raise RunError(_("the judge and the criterion belong to different campaigns"))
    if judge.kind == Judge.Kind.IMPORTED:
        raise RunError(IMPORTED_CANNOT_RUN)
    if judge.kind == Judge.Kind.LEXICAL and is_categorical(criterion):
        raise RunError(
            refusal(
                _("the lexical judge gives 0 or 1 only; %(criterion)s has categories: run an LLM judge"),
                criterion=repr(criterion.name),
            ),
            field="judge",
        )
    _check_prompt(judge=judge, criterion=criterion)
    try:
        with transaction.atomic():
            run = JudgeRun.objects.create(
                campaign_id=criterion.campaign_id,
                criterion=criterion,
                judge=judge,
                scope=scope,
                concurrency=concurrency or settings.JUDGE_CONCURRENCY,
                token_budget=token_budget,
                created_by=user,
            )
    except IntegrityError:
        raise RunError(_already_active(judge=judge.name, criterion=criterion.name), conflict=True) from None
    by_answer: dict[int, list[int]] = {}
    for unit_id, answer_id in (
        _units_in_scope(criterion=criterion, judge=judge, scope=scope)
        .order_by("answer_id", "id")
        .values_list("id", "answer_id")
        .iterator(chunk_size=5000)
    ):
        by_answer.setdefault(answer_id, []).append(unit_id)
    JudgeBatch.objects.bulk_create(
        [JudgeBatch(run=run, answer_id=answer_id, unit_ids=ids) for answer_id, ids in by_answer.items()],
        batch_size=2000,
    )
    run.total_units = sum(len(ids) for ids in by_answer.values())
    if run.total_units == 0:
        run.status = JudgeRun.Status.DONE
        run.finished_at = timezone.now()
    run.save(update_fields=["total_units", "status", "finished_at"])
    return run


def pending_batch_chunks(*, run_id: int, chunk_size: int) -> list[list[int]]:
    """Ids of the run's pending batches, in chunks of ``chunk_size`` (one Celery task each)."""
    ids = list(
        JudgeBatch.objects.filter(run_id=run_id, status=JudgeBatch.Status.PENDING)
        .order_by("id")
        .values_list("id", flat=True)
    )
    return [ids[i : i + chunk_size] for i in range(0, len(ids), chunk_size)]


def cancel_run(*, run_id: int) -> JudgeRun:
    """Stop a run: pending batches are cancelled; a batch already being judged finishes."""
    with transaction.atomic():
        run = JudgeRun.objects.select_for_update().get(pk=run_id)
        if not run.is_active:
            raise RunError(
                refusal(_("run %(run)s is %(status)s, not active"), run=run_id, status=run.status),
                conflict=True,
            )
        JudgeBatch.objects.filter(run=run, status=JudgeBatch.Status.PENDING).update(
            status=JudgeBatch.Status.CANCELLED
        )
        run.status = JudgeRun.Status.CANCELLED
        run.finished_at = timezone.now()
        run.save(update_fields=["status", "finished_at"])
    return run


def resume_run(*, run_id: int, token_budget: int | None = None) -> JudgeRun:
    """Put a cancelled or stopped run back to work: its unfinished batches become pending again.

    Failed batches are retried too, and batches left claimed by a dead worker are returned.
    ``token_budget`` raises the budget of a run stopped by it. Refused (RunError) when the judge's
    prompt for the criterion changed since it was bound.
    """
    _check_limits(token_budget=token_budget)
    run = JudgeRun.objects.select_related("judge", "criterion").get(pk=run_id)
    _check_prompt(judge=run.judge, criterion=run.criterion)
    recover_run(run_id=run_id)
    with transaction.atomic():
        run = JudgeRun.objects.select_for_update().get(pk=run_id)
        if (
            run.status == JudgeRun.Status.DONE
            and not run.batches.filter(status=JudgeBatch.Status.FAILED).exists()
        ):
            raise RunError(
                refusal(
                    _("run %(run)s is done; start a run with scope 'failed' or 'missing' instead"), run=run_id
                )
            )
        reopened = JudgeBatch.objects.filter(
            run=run, status__in=[JudgeBatch.Status.CANCELLED, JudgeBatch.Status.FAILED]
        )
        # A failed batch keeps its tokens and cost; its units are judged again.
        reopened.update(status=JudgeBatch.Status.PENDING, error="", done_units=0, failed_units=0)
        if token_budget is not None:
            run.token_budget = token_budget
        run.status = JudgeRun.Status.RUNNING
        run.finished_at = None
        try:
            with transaction.atomic():
                run.save(update_fields=["token_budget", "status", "finished_at"])
        except IntegrityError:
            raise RunError(
                _already_active(judge=run.judge.name, criterion=run.criterion.name), conflict=True
            ) from None
    return sync_counters(run_id=run.pk)


def run_inline(
    *, run_id: int, concurrency: int | None = None, progress: Callable[[JudgeRun], None] | None = None
) -> JudgeRun:
    """Process every pending batch of the run in this process (the shell command, the demo)."""
    process_batches(
        run_id=run_id,
        batch_ids=JudgeBatch.objects.filter(run_id=run_id, status=JudgeBatch.Status.PENDING)
        .order_by("id")
        .values_list("id", flat=True),
        concurrency=concurrency,
        progress=progress,
    )
    return sync_counters(run_id=run_id)


# How many of a run's failure reasons its page shows (the most frequent), and how many units of
# each: the reasons of a run whose calls all failed are a handful, however many units it has.
SHOWN_REASONS = 20
SHOWN_UNITS = 25


@dataclass(frozen=True)
class FailureReason:
    """One reason a run's units failed, the number of its failed units that give it, and the
    first of them by id (unit id, answer external id, sentence position)."""

    error: str
    count: int
    units: list[dict]

    @property
    def more(self) -> int:
        """Units with this reason beyond those listed."""
        return self.count - len(self.units)


def _failed_of(run: JudgeRun):
    """The failed judgments of the run's failed batches (a batch is failed when any of its units
    is; a batch holds the units of one answer)."""
    return Judgment.objects.filter(
        criterion_id=run.criterion_id,
        judge_id=run.judge_id,
        status=Judgment.Status.FAILED,
        unit__answer_id__in=JudgeBatch.objects.filter(run=run, status=JudgeBatch.Status.FAILED).values(
            "answer_id"
        ),
    )


def failure_reasons(
    *, run: JudgeRun, reasons: int = SHOWN_REASONS, units: int = SHOWN_UNITS
) -> list[FailureReason]:
    """The run's failed units grouped by their reason, most frequent first (then by reason): the
    ``reasons`` most frequent, each with its first ``units`` units. Two queries whatever the
    number of failures; none when the run counts no failed unit."""
    if reasons < 1 or units < 0:
        raise ValueError("reasons must be >= 1 and units >= 0")
    if not run.failed_units:
        return []
    failed = _failed_of(run)
    groups = list(failed.values("error").annotate(count=Count("id")).order_by("-count", "error")[:reasons])
    if not groups:
        return []
    listed: dict[str, list[dict]] = {group["error"]: [] for group in groups}
    if units:
        rows = (
            failed.filter(error__in=list(listed))
            .annotate(rank=Window(RowNumber(), partition_by=[F("error")], order_by=F("unit_id").asc()))
            .filter(rank__lte=units)
            .order_by("unit_id")
            .values("error", "unit_id", "unit__answer__external_id", "unit__sentence__position")
        )
        for row in rows:
            listed[row.pop("error")].append(row)
    return [
        FailureReason(error=group["error"], count=group["count"], units=listed[group["error"]])
        for group in groups
    ]
