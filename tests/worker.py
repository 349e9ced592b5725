"""Start and kill a real Celery worker process that works on the test database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from django.conf import settings
from django.db import connection
from kombu import pools as kombu_pools

from config.celery import app as celery_app

ROOT = Path(__file__).resolve().parent.parent


def test_database_url() -> str:
    """A DATABASE_URL that points another process at the database this test uses."""
    params = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{params['NAME']}"
    user = params.get("USER") or ""
    password = f":{params['PASSWORD']}" if params.get("PASSWORD") else ""
    host = params.get("HOST") or "127.0.0.1"
    port = params.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{params['NAME']}"


def _reset_connections() -> None:
    """Drop pooled broker connections so the next message uses the current configuration.

    kombu keeps its pools in process-wide groups keyed by the broker URL and options: closing
    the app's pool alone would leave that closed pool registered, and the next test on the
    same URL (Redis in CI) would get "Acquire on closed pool". ``pools.reset`` closes and
    forgets them all.
    """
    kombu_pools.reset()
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


class Worker:
    """A Celery worker subprocess on its own queue, so no other run's messages reach it."""

    def __init__(
        self, *, tmp_path: Path, pool: str = "solo", concurrency: int = 1, env: dict[str, str] | None = None
    ) -> None:
        self.queue = f"test-{uuid.uuid4().hex[:12]}"
        self.env = dict(env or {})  # more of the worker's environment (its settings)
        self.var_dir = tmp_path / "var"
        self.var_dir.mkdir(parents=True, exist_ok=True)
        self.pool = pool
        self.concurrency = concurrency
        self.process: subprocess.Popen | None = None
        self.log_path = tmp_path / "worker.log"
        self._saved: dict = {}

    def configure_producer(self) -> None:
        """Make this test process send tasks to the worker's broker and queue (no eager mode)."""
        conf = celery_app.conf
        self._saved = {
            "task_always_eager": conf.task_always_eager,
            "task_default_queue": conf.task_default_queue,
            "broker_transport_options": dict(conf.broker_transport_options or {}),
        }
        conf.task_always_eager = False
        conf.task_default_queue = self.queue
        if settings.CELERY_BROKER_URL.startswith("filesystem://"):
            queue_dir = self.var_dir / "celery" / "queue"
            queue_dir.mkdir(parents=True, exist_ok=True)
            conf.broker_transport_options = {
                "data_folder_in": str(queue_dir),
                "data_folder_out": str(queue_dir),
                "processed_folder": str(self.var_dir / "celery" / "processed"),
                "control_folder": str(self.var_dir / "celery" / "control"),
                "store_processed": False,
            }
        _reset_connections()

    def restore_producer(self) -> None:
        for key, value in self._saved.items():
            setattr(celery_app.conf, key, value)
        _reset_connections()

    def start(self) -> None:
        env = {
            **os.environ,
            "DATABASE_URL": test_database_url(),
            "VAR_DIR": str(self.var_dir),
            "CELERY_QUEUE": self.queue,
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "CELERY_TASK_ALWAYS_EAGER": "0",
            **self.env,
        }
        log = open(self.log_path, "ab")  # noqa: SIM115 - the worker writes to it until it stops
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--pool",
                self.pool,
                "--concurrency",
                str(self.concurrency),
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-n",
                f"{self.queue}@%h",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill(self) -> None:
        """kill -9 the worker and every process it started."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def wait_for(predicate, *, timeout: float, interval: float = 0.2, what=lambda: "condition") -> None:
    """Poll ``predicate`` until it is true; after ``timeout`` seconds fail with ``what()``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what()}")
