"""The Celery application; configuration comes from Django settings (CELERY_*).

Each time a worker connects to the broker, at its start and after every outage, it sends the
recovery jobs (``RECOVERY_TASKS``): work recorded while no job could reach it (a broker down), or
left by a worker killed mid-job, is sent again (``annotation.broker``).
"""

from __future__ import annotations

import logging
import os

from celery import Celery, bootsteps

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

logger = logging.getLogger(__name__)

app = Celery("attest")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# What a connecting worker sends: judge runs with work left (claims of dead workers given back
# first), samples waiting for their draw, batches of answers waiting for their import, and
# recomputations of the estimates that are due.
RECOVERY_TASKS = (
    "evaluation.recover_runs",
    "annotation.recover_samples",
    "api.recover_batches",
    "evaluation.recover_refreshes",
)


class RecoverOnConnect(bootsteps.StartStopStep):
    """A step of the worker's consumer, started again on every (re)connection to the broker."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def start(self, c) -> None:  # pragma: no cover - runs in the worker
        for name in RECOVERY_TASKS:
            try:
                app.send_task(name)
            except Exception:  # the worker must keep consuming even if the send fails
                logger.exception("could not send %s", name)


app.steps["consumer"].add(RecoverOnConnect)
