"""The judge's side: judges, their judgments, runs, report snapshots."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy, ngettext, pgettext_lazy

from annotation.models import Campaign, Criterion, CriterionVersion, Unit


class Judge(models.Model):
    """A model + prompt version + settings; judgments of two judges are never mixed."""

    class Kind(models.TextChoices):
        OPENAI = "openai", gettext_lazy("OpenAI-compatible LLM")
        LEXICAL = "lexical", gettext_lazy("Offline lexical baseline")
        IMPORTED = "imported", gettext_lazy("Imported labels")

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="judges")
    name = models.SlugField(max_length=100)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.OPENAI)
    model = models.CharField(max_length=200, blank=True)
    prompt_version = models.CharField(max_length=50, blank=True)
    language = models.CharField(max_length=8, default="fr")
    temperature = models.FloatField(default=0.0)
    settings = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    # Set on the judges ``evaluation.estimates.judge_choice`` lists for a criterion, never stored:
    # whether it is the criterion's primary judge, and whether it gave confidences on it.
    is_primary: bool = False
    has_confidences: bool = False

    class Meta:
        ordering = ["campaign_id", "name"]
        constraints = [models.UniqueConstraint(fields=["campaign", "name"], name="judge_unique_name")]

    def __str__(self) -> str:
        return self.name


class PrimaryJudge(models.Model):
    """The judge a criterion's reports read when none is named, chosen by a manager among the
    judges that labeled it (``evaluation.estimates.judge_choice``)."""

    criterion = models.OneToOneField(Criterion, on_delete=models.CASCADE, related_name="primary_judge")
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="primary_of")
    chosen_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    chosen_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.criterion}: {self.judge}"


class Judgment(models.Model):
    """One judge's verdict on one unit for one criterion. Unique: re-running is idempotent."""

    class Status(models.TextChoices):
        OK = "ok", gettext_lazy("OK")
        FAILED = "failed", pgettext_lazy("choice", "Failed")

    unit = models.ForeignKey(Unit, on_delete=models.CASCADE, related_name="judgments")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="judgments")
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="judgments")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OK)
    value = models.PositiveSmallIntegerField(null=True, blank=True)
    # The judge's probability for its label (evaluation.judge.confidence): from the reply's
    # log-probabilities, the judge's own words, or the lexical judge's score; None when unknown.
    confidence = models.FloatField(null=True, blank=True)
    reasoning = models.TextField(blank=True)
    raw_response = models.TextField(blank=True)
    error = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    latency_ms = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["unit", "criterion", "judge"], name="judgment_unique_unit"),
            models.CheckConstraint(
                condition=(
                    Q(status="ok", value__gte=0, value__lte=20) | Q(status="failed", value__isnull=True)
                ),
                name="judgment_value_matches_status",
            ),
            models.CheckConstraint(
                condition=Q(confidence__isnull=True) | Q(confidence__gte=0, confidence__lte=1),
                name="judgment_confidence_range",
            ),
        ]
        # With updated_at last, the latest change of a judge's judgments of a criterion (the page
        # cache's key) and whether one changed since a snapshot are one probe of the index, not a
        # read of every judgment.
        # Whether a judge gave confidences on a criterion (the sample designs' choice of judge) is
        # one probe of the partial index, holding only judgments with a confidence, where it
        # was a read of every judgment of a judge that gave none.
        indexes = [
            models.Index(
                fields=["judge", "criterion", "status", "updated_at"], name="judgment_judge_changes"
            ),
            models.Index(
                fields=["judge", "criterion"], condition=Q(confidence__isnull=False), name="judgment_scored"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.judge} {self.value} on unit {self.unit_id}"


class JudgeRun(models.Model):
    """One judge over a set of units of one criterion, split into per-answer batches."""

    class Scope(models.TextChoices):
        ALL = "all", gettext_lazy("All units")
        MISSING = "missing", gettext_lazy("Units not yet judged")
        FAILED = "failed", gettext_lazy("Units whose judgment failed")
        # The judge's drawn share of the criterion (JudgeShare) and, in the share's themes, the
        # units people labelled or were given to label, not judged yet (evaluation.judge.runs).
        SHARE = "share", gettext_lazy("Units of the judge's share, and the labelled units")

    class Status(models.TextChoices):
        PENDING = "pending", pgettext_lazy("choice", "Pending")
        RUNNING = "running", pgettext_lazy("choice", "Running")
        DONE = "done", pgettext_lazy("choice", "Done")
        # Ended with no unit judged and at least one failed (evaluation.judge.scheduler).
        FAILED = "failed", pgettext_lazy("choice", "Failed")
        CANCELLED = "cancelled", pgettext_lazy("choice", "Cancelled")
        BUDGET = "budget", gettext_lazy("Stopped: token budget reached")

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="judge_runs")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="judge_runs")
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="runs")
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.ALL)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    concurrency = models.PositiveIntegerField(default=8)
    token_budget = models.PositiveBigIntegerField(null=True, blank=True)
    total_units = models.PositiveIntegerField(default=0)
    done_units = models.PositiveIntegerField(default=0)
    failed_units = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    calls = models.PositiveIntegerField(default=0)
    # Of the totals above, what went on calls whose replies were never stored in a batch (a reply
    # after the client's timeout, a call in flight when its worker died): see LLMCall.
    unused_calls = models.PositiveIntegerField(default=0)
    unused_prompt_tokens = models.PositiveBigIntegerField(default=0)
    unused_completion_tokens = models.PositiveBigIntegerField(default=0)
    unused_cost = models.FloatField(default=0.0)
    # Totals above are refreshed from the batches and the calls
    # (evaluation.judge.accounting.sync_counters).
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # Two active runs of one judge on one criterion would race for the same units; two
            # requests that arrive together (a double click) would both pass a check-then-create.
            models.UniqueConstraint(
                fields=["judge", "criterion"],
                condition=Q(status__in=["pending", "running"]),
                name="judgerun_one_active_per_judge_criterion",
            )
        ]

    def __str__(self) -> str:
        return f"run {self.pk}: {self.judge} on {self.criterion}"

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.PENDING, self.Status.RUNNING)

    @property
    def progress(self) -> float:
        if not self.total_units:
            return 1.0
        return min(1.0, (self.done_units + self.failed_units) / self.total_units)

    @property
    def status_text(self) -> str:
        """The status as a person reads it, failures told: "Failed: 681 of 681 units", "Done with
        12 failures", else the status's name (in the active language)."""
        if self.status == self.Status.FAILED:
            return gettext("Failed: %(failed)s of %(total)s units") % {
                "failed": self.failed_units,
                "total": self.total_units,
            }
        if self.status == self.Status.DONE and self.failed_units:
            return ngettext(
                "Done with %(count)s failure", "Done with %(count)s failures", self.failed_units
            ) % {"count": self.failed_units}
        return str(self.get_status_display())

    @property
    def status_tone(self) -> str:
        """How the status reads at a glance: "good" (done, nothing failed), "bad" (failed), "warn"
        (done with failures, cancelled, stopped by its budget), "" while it works."""
        if self.status == self.Status.FAILED:
            return "bad"
        if self.status == self.Status.DONE and not self.failed_units:
            return "good"
        return "" if self.is_active else "warn"

    @property
    def shares(self) -> tuple[float, float]:
        """The percentages of the run's units judged and failed, for its progress bar: a failure
        is never drawn thinner than half a percent, so that one in a thousand still shows."""
        if not self.total_units:
            return (0.0, 0.0)
        failed = 100 * self.failed_units / self.total_units
        if self.failed_units:
            failed = max(failed, 0.5)
        judged = min(100 * self.done_units / self.total_units, 100 - failed)
        return (round(judged, 2), round(failed, 2))


class JudgeBatch(models.Model):
    """The units of one answer in a run: one prompt carries them all, so sources go once."""

    class Status(models.TextChoices):
        PENDING = "pending", pgettext_lazy("choice", "Pending")
        RUNNING = "running", pgettext_lazy("choice", "Running")
        DONE = "done", pgettext_lazy("choice", "Done")
        FAILED = "failed", pgettext_lazy("choice", "Failed")
        CANCELLED = "cancelled", pgettext_lazy("choice", "Cancelled")

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="batches")
    answer = models.ForeignKey("annotation.Answer", on_delete=models.CASCADE, related_name="+")
    unit_ids = models.JSONField(default=list)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    # Per-batch tallies; the run's totals are sums of these (no hot counter row to contend on).
    done_units = models.PositiveIntegerField(default=0)
    failed_units = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    calls = models.PositiveIntegerField(default=0)
    claimed_by = models.CharField(max_length=200, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    # Every reply of the LLM server for this batch, accepted or rejected, kept for audit: one
    # object per reply with accepted, error, finish_reason, prompt_tokens, completion_tokens,
    # cost, latency_ms, http_attempts (retried 429/5xx/timeouts included) and raw_response. The
    # tallies above are their sums.
    llm_calls = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["run", "answer"], name="judgebatch_unique_answer")]
        indexes = [models.Index(fields=["run", "status"])]


class LLMCall(models.Model):
    """One request to the LLM server, recorded before it is sent, outside the transaction that
    stores its batch: a call whose reply never got stored (the worker died, the client timed out)
    still counts. ``prompt_tokens`` and ``completion_tokens`` are the server's usage once a reply
    came back and was handed to storing; until then the call counts as estimated (see
    evaluation.judge.accounting). ``used``: its reply is in its batch's tallies."""

    class Outcome(models.TextChoices):
        SENT = "sent", gettext_lazy("Sent, no reply seen")
        REPLIED = "replied", gettext_lazy("Replied")
        REFUSED = "refused", gettext_lazy("Refused by the server (not billed)")
        LOST = "lost", gettext_lazy("No reply within the timeout, or the connection broke")

    # Indexed by the two indexes below, which start with it.
    run = models.ForeignKey(
        JudgeRun, on_delete=models.CASCADE, related_name="llm_call_records", db_index=False
    )
    batch = models.ForeignKey(JudgeBatch, on_delete=models.CASCADE, related_name="+")
    owner = models.CharField(max_length=200)
    prompt_sha256 = models.CharField(max_length=64)
    # Characters / 4 of the messages sent: the estimate when no reply to this prompt is known.
    estimated_prompt_tokens = models.PositiveIntegerField()
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.SENT)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    used = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    sent_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["run", "used"]),
            models.Index(fields=["run", "prompt_sha256"]),
        ]

    def __str__(self) -> str:
        return f"call {self.pk} of run {self.run_id} ({self.outcome})"


class JudgePrompt(models.Model):
    """The exact prompt a judge sends for a criterion: the system prompt rendered from one version
    of the criterion's guidelines and judge prompt, and its SHA-256. A judge keeps one prompt per
    criterion, so its labels never mix two."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="prompts")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="+")
    version = models.ForeignKey(CriterionVersion, on_delete=models.RESTRICT, related_name="+")
    sha256 = models.CharField(max_length=64)
    system_prompt = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["judge_id", "criterion_id"]
        constraints = [
            models.UniqueConstraint(fields=["judge", "criterion"], name="judgeprompt_unique_criterion"),
        ]

    def __str__(self) -> str:
        return f"{self.judge} on {self.criterion}: {self.sha256[:12]}"


class ReportSnapshot(models.Model):
    """The estimates of one criterion x judge x method x alpha at one moment, as they were.

    ``data`` is the report's JSON (``evaluation.estimates.report.report_as_json``), so a snapshot keeps
    its numbers even after the labels, the judgments or the estimator change.
    """

    class Trigger(models.TextChoices):
        JUDGE_RUN = "judge_run", gettext_lazy("Judge run finished")
        LABELS = "labels", gettext_lazy("Human labels changed")
        IMPORT = "import", pgettext_lazy("snapshot trigger", "Import")
        MANUAL = "manual", gettext_lazy("On demand")

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="report_snapshots")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="report_snapshots")
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="report_snapshots")
    method = models.CharField(max_length=10)
    alpha = models.FloatField()
    trigger = models.CharField(max_length=10, choices=Trigger.choices)
    n_human = models.PositiveIntegerField()
    n_judge = models.PositiveIntegerField()
    data = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["criterion", "judge", "method", "alpha", "created_at"])]

    def __str__(self) -> str:
        return f"{self.criterion} / {self.judge} ({self.method}) at {self.created_at:%Y-%m-%d %H:%M}"


class EstimateSchedule(models.Model):
    """Whether a recomputation of a criterion's estimates is already on its way to a worker.

    Taking the empty ``due_at`` with a conditional UPDATE is what keeps a burst of labels from
    enqueueing one recomputation each.
    """

    criterion = models.OneToOneField(Criterion, on_delete=models.CASCADE, related_name="+")
    due_at = models.DateTimeField(null=True, blank=True)
    trigger = models.CharField(max_length=10, choices=ReportSnapshot.Trigger.choices, blank=True)


class JudgeShare(models.Model):
    """A random share of a criterion's answers drawn for a judge to run on: within each theme,
    each answer drawn independently with the theme's probability (``shares``: theme -> q;
    Poisson sampling, seeded by ``seed``), every unit of a drawn answer recorded with its
    inclusion probability (``JudgeShareItem``). The estimates that combine several judges take
    this judge's term over the share by inverse probability (``evaluation.estimates.multi_judge``);
    drawn by the planner's design (``evaluation.designs.judge_shares``). One per judge and
    criterion: a share is a design, and a second one would make the first's probabilities wrong."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="judge_shares")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="judge_shares")
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="shares")
    seed = models.BigIntegerField()
    shares = models.JSONField(default=dict)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["judge", "criterion"], name="judgeshare_one_per_judge")
        ]

    def __str__(self) -> str:
        return f"{self.judge} on a share of {self.criterion}"


class JudgeShareItem(models.Model):
    """A unit of a judge's share and the probability that the share drew it (its answer's)."""

    share = models.ForeignKey(JudgeShare, on_delete=models.CASCADE, related_name="items")
    unit = models.ForeignKey(Unit, on_delete=models.CASCADE, related_name="+")
    probability = models.FloatField()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["share", "unit"], name="judgeshareitem_unique_unit"),
            models.CheckConstraint(
                condition=Q(probability__gt=0, probability__lte=1), name="judgeshareitem_probability_range"
            ),
        ]


class HeldOutSplit(models.Model):
    """A criterion's human-labelled units split once into a selection part, on which prompts
    are compared and one chosen, and a held-out part, on which the chosen judge's figures are
    reported (``evaluation.designs.held_out``). A question's units all fall on one side (its
    answers and their sentences together): the side is a hash of ``seed`` and the question's id,
    held out when it falls under ``held_out_share``. Nothing is stored per unit, so a unit
    labelled later gets its side from the same rule and no unit ever moves. One per criterion,
    never edited: another split would let the held-out part be chosen after looking."""

    criterion = models.OneToOneField(Criterion, on_delete=models.CASCADE, related_name="held_out_split")
    seed = models.BigIntegerField()
    held_out_share = models.FloatField(default=0.5)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(held_out_share__gt=0) & Q(held_out_share__lt=1),
                name="heldoutsplit_share_range",
            )
        ]

    def __str__(self) -> str:
        return f"held-out split of {self.criterion}"
