"""Attest on a bad day in production: faults injected into a real deployment on this machine, and
what the people using it saw, measured.

    .venv/bin/python bench/fault_bench.py [--quick] [--seed 7]

The deployment: PostgreSQL (a database of the bench's own, ``attest_faults``, dropped after),
gunicorn with config/gunicorn.py (two processes of eight threads), a real Celery worker process
(prefork, two children) whose broker is Redis db 14 on 127.0.0.1:6379 (Django's cache, where the
API's rate is counted, beside it), and the scripted LLM server of tests/llm_server.py as the
judge's server. Browsers and API clients are threads of this process talking HTTP to gunicorn,
with the page's own flow (static/js/annotate.js): an annotator's page holds the unit after the one
on screen, shows it the moment a label is given and posts the label with its request key and that
unit (``shown``), answered with the unit after it (one request per label; the unit ahead is asked
for, ``?after=``, only when the page holds none: just opened, or after a refused or lost label),
pressing again (same key) after a failed save as the page tells them to. Sessions are made as
Django's ``force_login`` makes them (the login page is driven for real only where logging in is
what is measured).

Cases, each one row of the printed table:

1. ``kill -9`` of the worker (its whole process group) mid judge run, then a new worker: every
   unit judged once, the calls recorded against the requests the LLM server got, the tokens
   recorded against the tokens it served, and the time from the kill until the run is done.
2. PostgreSQL ends every session of the app (``pg_terminate_backend``) twice while four
   annotators label through gunicorn and a judge run works: labels lost or doubled, the
   answers the annotators got (5xx), the run finished, and how long until everyone is served.
3. The broker's Redis (a redis-server of the bench's own, on another port) stopped and started
   again while runs and samples are asked for, on the pages and the API: what each answered
   while it was down, and the time from its restart until nothing is pending. Twice: (a) with
   Django's cache elsewhere, (b) with the cache on the same Redis, as the README's production
   environment has it.
4. Eight annotators in blind double mode labelling back to back (60 s; ``--quick`` 15 s) with
   the page's flow, some labels sent twice at once (a double press) and, when the page holds no
   unit ahead, some sent while it asks for one (the prefetch in flight); then they finish the
   queue: labels lost or doubled, anyone holding both slots of a unit, refusals seen, every unit
   two labels from two people.
5. Bad inputs, one row each: an XLSX decompression bomb, NUL characters in an import and in the
   API, deeply nested JSON (a Label Studio import and the import page), an anonymous 150 MB
   upload, six slow anonymous clients, a finished run's cost rewritten in SQL, an expired token,
   a token after a password change, 130 API requests with one token across both gunicorn
   processes (sequential and concurrent), and a username locked out while another account
   behind the same address logs in.

Columns: tries (faults injected, or requests made), what the person saw, rows lost, rows doubled,
rows written (case 5: the app's data tables, counted before and after), seconds to recover.
Nothing is assumed: each figure is read from the responses, the database, the LLM server or
/proc. The run is seeded (data, choices, timing of the faults by progress), but the numbers of
a shared 2-core machine move from one run to the next.

Everything the bench starts (servers, workers, redis-server) runs in a process group of its own
and is stopped on exit, Ctrl-C or SIGTERM included; the database and the temporary directory are
removed, and the keys it made in Redis db 14 deleted. It asserts nothing: a case that misbehaves
is printed as it behaved. Not part of the test suite. docs/operations.md keeps its last run and
what it says.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import http.client
import http.cookies
import json
import os
import random
import re
import secrets
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.annotation_bench import AFTER_RE, after_answer  # noqa: E402
from bench.pgdb import PG, bench_database  # noqa: E402
from tests import llm_server  # noqa: E402
from tests.llm_server import ScriptedLLMServer, find_indices  # noqa: E402
from tests.web_servers import free_port, slow_client  # noqa: E402

DATABASE = "attest_faults"
REDIS_HOST, REDIS_PORT, REDIS_DB = "127.0.0.1", 6379, 14
THEMES = ("Finance", "RH", "IT")
PASSWORD = "bench-faults-correct-horse"
# Case 4: the share of labels sent twice at once, and of labels sent while the prefetch is in flight.
DOUBLE_PRESS, PRESS_DURING_PREFETCH = 0.1, 0.2
# A person presses again after a failed save, at most this many times, this far apart.
PRESSES, PRESS_PAUSE_S = 40, 0.25
UPLOAD_BYTES = 150 * 1024 * 1024
# Past IMPORT_MAX_BYTES unpacked, and under it (caught by the ratio of unpacked to packed size).
BOMB_MEGABYTES = (300, 150)
NUL = "\x00"


@dataclass(frozen=True)
class Plan:
    answers: int  # campaign A: answers of three sentences (judge runs, case 2's labels)
    blind_units: int  # campaign B: the blind sample's sentence units (case 4)
    kills: int  # case 1
    labelling_s: float  # case 2
    outage_s: float  # case 3
    rush_s: float  # case 4
    slow_s: float  # case 5, the slow clients


FULL = Plan(answers=200, blind_units=480, kills=2, labelling_s=30, outage_s=20, rush_s=60, slow_s=8)
QUICK = Plan(answers=60, blind_units=240, kills=1, labelling_s=12, outage_s=5, rush_s=15, slow_s=5)


@dataclass
class Row:
    case: str
    tries: int | str
    seen: str
    lost: int | str = "-"
    doubled: int | str = "-"
    written: int | str = "-"
    recover: float | str = "-"


# Processes -----------------------------------------------------------------------------------


class Processes:
    """Every process the bench starts, each in a process group of its own; all stopped at the end."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen] = []

    def start(self, args: list[str], *, env: dict[str, str], log: Path) -> subprocess.Popen:
        with log.open("ab") as out:
            process = subprocess.Popen(
                args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.started.append(process)
        return process

    @staticmethod
    def signal_group(process: subprocess.Popen, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)

    def kill(self, process: subprocess.Popen) -> None:
        """kill -9 the process and everything in its group."""
        self.signal_group(process, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)

    def stop(self, process: subprocess.Popen, *, grace: float = 15) -> None:
        """SIGTERM to the process (a Celery worker or gunicorn's master then stops its children in
        order), SIGKILL to whatever is left of its group after ``grace`` seconds."""
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=grace)
        # Whatever is left of the group (a prefork child, a gunicorn worker) goes too.
        self.signal_group(process, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)

    def close(self) -> None:
        for process in reversed(self.started):
            self.stop(process, grace=5)


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (gunicorn's workers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return sorted(found)


def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    """The most memory the process ever held resident (VmHWM), in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def wait_until(predicate: Callable[[], bool], *, timeout: float, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


@dataclass
class Web:
    process: subprocess.Popen
    port: int

    def workers(self) -> list[int]:
        return children(self.process.pid)


def start_web(procs: Processes, env: dict[str, str], *, log: Path, workers: int = 2, threads: int = 8) -> Web:
    """gunicorn with config/gunicorn.py on a free port, answering."""
    port = free_port()
    gunicorn = ROOT / ".venv" / "bin" / "gunicorn"
    command = str(gunicorn) if gunicorn.exists() else shutil.which("gunicorn") or "gunicorn"
    process = procs.start(
        [command, "-c", "config/gunicorn.py", "config.wsgi"],
        env={
            **env,
            "WEB_BIND": f"127.0.0.1:{port}",
            "WEB_WORKERS": str(workers),
            "WEB_THREADS": str(threads),
        },
        log=log,
    )
    web = Web(process=process, port=port)

    def answers() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"gunicorn stopped: {log.read_text(errors='replace')[-2000:]}")
        return Browser(port).request("GET", "/login/", timeout=5).status == 200

    if not wait_until(answers, timeout=120, interval=0.3):
        raise RuntimeError("gunicorn did not answer within 120 s")
    wait_until(lambda: len(web.workers()) >= workers, timeout=30)
    return web


def start_worker(procs: Processes, env: dict[str, str], *, name: str, log: Path) -> subprocess.Popen:
    """A Celery worker as production runs one (prefork), on the broker and queue of ``env``; returns
    once it says it is ready."""
    offset = log.stat().st_size if log.exists() else 0
    process = procs.start(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool",
            "prefork",
            "--concurrency",
            "2",
            "--loglevel",
            "INFO",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-n",
            f"{name}@%h",
        ],
        env=env,
        log=log,
    )

    def ready() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"the worker stopped: {log.read_text(errors='replace')[-2000:]}")
        with log.open("rb") as stream:
            stream.seek(offset)
            return b" ready." in stream.read()

    if not wait_until(ready, timeout=120, interval=0.2):
        raise RuntimeError("the worker was not ready within 120 s")
    return process


class OwnRedis:
    """A redis-server of the bench's own, on a free port, without persistence: stopped and started
    again, it comes back empty, as a Redis restarted without its disk."""

    def __init__(self, procs: Processes, directory: Path) -> None:
        self.procs = procs
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    def url(self, db: int) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        server = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.process = self.procs.start(
            [server, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
            + ["--dir", str(self.directory)],
            env=dict(os.environ),
            log=self.directory / "redis.log",
        )
        if not wait_until(self.answers, timeout=15, interval=0.05):
            raise RuntimeError("redis-server did not answer")

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None:
            self.procs.stop(self.process, grace=10)


@contextlib.contextmanager
def machine_redis_cleaned() -> Iterator[None]:
    """The keys the bench adds to Redis db 14 on the machine's Redis (its queue and bindings, the
    API's rate counts) are deleted when it ends; keys that were there before are left alone."""
    import redis

    client = redis.Redis(host=REDIS_HOST, port=REDIS_PORT, db=REDIS_DB)
    before = set(client.keys("*"))
    try:
        yield
    finally:
        added = [key for key in client.keys("*") if key not in before]
        if added:
            client.delete(*added)
        client.close()


# HTTP ----------------------------------------------------------------------------------------


@dataclass
class Reply:
    status: int  # 0: no answer (refused, reset, timed out)
    text: str
    headers: dict[str, str]
    started: float
    seconds: float
    error: str = ""

    @property
    def ended(self) -> float:
        return self.started + self.seconds


class Browser:
    """One person's browser: cookies, and a connection per request (as a browser opens one for a
    request sent while another is under way)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.cookies: dict[str, str] = {}
        self._lock = threading.Lock()

    def log_in(self, user) -> Browser:
        """A session for ``user``, made as Django's test client's ``force_login`` makes it."""
        from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
        from django.contrib.sessions.backends.db import SessionStore

        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        assert session.session_key is not None
        self.cookies["sessionid"] = session.session_key
        return self

    def request(
        self,
        method: str,
        path: str,
        *,
        form: Mapping[str, object] | None = None,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 60,
    ) -> Reply:
        sent = {"Host": f"127.0.0.1:{self.port}", "Connection": "close", **(headers or {})}
        with self._lock:
            if self.cookies:
                sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if form is not None:
            body = urllib.parse.urlencode({k: str(v) for k, v in form.items()}).encode()
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        started = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=sent)
            response = conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as exc:
            return Reply(0, "", {}, started, time.monotonic() - started, error=exc.__class__.__name__)
        finally:
            conn.close()
        elapsed = time.monotonic() - started
        for raw in response.headers.get_all("Set-Cookie") or []:
            for name, morsel in http.cookies.SimpleCookie(raw).items():
                with self._lock:
                    if morsel.value and morsel["max-age"] != "0":
                        self.cookies[name] = morsel.value
                    else:
                        self.cookies.pop(name, None)
        return Reply(
            response.status,
            data.decode("utf-8", "replace"),
            {k.lower(): v for k, v in response.getheaders()},
            started,
            elapsed,
        )


def api(port: int, method: str, path: str, token: str, payload: object = None, *, raw: bytes | None = None):
    """A call to the REST API with a bearer token: the reply and its JSON (None when not JSON)."""
    body = raw if raw is not None else (None if payload is None else json.dumps(payload).encode())
    reply = Browser(port).request(
        method,
        "/api/v1" + path,
        body=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        data = json.loads(reply.text) if reply.text else None
    except json.JSONDecodeError:
        data = None
    return reply, data


def multipart(fields: dict[str, str], files: dict[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    boundary = "bench" + uuid.uuid4().hex
    parts = []
    for name, value in fields.items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        )
    for name, (filename, data) in files.items():
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        )
        parts.append(head.encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
WORK = re.compile(r'<section id="work"[^>]*data-unit="(\d*)"')
REQUEST_KEY = re.compile(r'name="request_key" value="([0-9a-f]+)"')
VERSION = re.compile(r'name="guidelines_version" value="(\d+)"')
VALUES = re.compile(r'<button type="submit" name="value" value="(\d+)"')
REFUSAL = re.compile(r'<p class="msg error" role="alert">(.*?)</p>', re.S)


def csrf_of(text: str) -> str:
    found = CSRF.search(text)
    return found.group(1) if found else ""


@dataclass(frozen=True)
class Shown:
    """The work region of an annotation page or fragment: the unit on screen (None: nothing left),
    and the unit it follows when it answers a label that named the unit shown (``data-after``)."""

    unit: int | None
    after: int | None
    key: str
    csrf: str
    values: tuple[int, ...]
    refusal: str


def shown(reply: Reply | None) -> Shown | None:
    if reply is None or reply.status != 200:
        return None
    work = WORK.search(reply.text)
    if work is None:
        return None
    text = reply.text[work.start() :]
    key = REQUEST_KEY.search(text)
    refusal = REFUSAL.search(text)
    after = AFTER_RE.search(text)
    return Shown(
        unit=int(work.group(1)) if work.group(1) else None,
        after=int(after.group(1)) if after and after.group(1) else None,
        key=key.group(1) if key else "",
        csrf=csrf_of(text),
        values=tuple(int(v) for v in VALUES.findall(text)),
        refusal=re.sub(r"\s+", " ", refusal.group(1)).strip() if refusal else "",
    )


class Annotator:
    """A person on a stage page with the page's flow (static/js/annotate.js): the unit on screen
    and the one after it, held ahead (leased to them too); a label shows the unit ahead at once
    and is posted with its request key and that unit (``shown``), answered with the unit after it,
    held ahead in turn (:func:`bench.annotation_bench.after_answer` says what the page does with
    an answer). The unit ahead is asked for (``?after=``) only when the page holds none. A failed
    save is pressed again with the same key. With ``faulty``, some labels are sent twice at once
    and, when no unit is held ahead, some while the page is asking for one."""

    def __init__(self, *, port: int, user, page: str, rng: random.Random) -> None:
        self.browser = Browser(port).log_in(user)
        self.user_id: int = user.pk
        self.page = page
        self.submit = page + "submit/"
        self.rng = rng
        self.version = ""
        self.current: Shown | None = None
        self.ahead: Shown | None = None
        self.confirmed: set[int] = set()
        self.replies: list[Reply] = []
        self.refusals: Counter[str] = Counter()
        self.posted = 0
        self.doubles = 0
        self.races = 0
        self.gave_up = 0
        self.labels_at: list[float] = []

    def _get(self, path: str, *, htmx: bool) -> Reply:
        reply = self.browser.request("GET", path, headers={"HX-Request": "true"} if htmx else None)
        self.replies.append(reply)
        return reply

    def open(self) -> Shown | None:
        """The page, loaded whole (again)."""
        for _ in range(PRESSES):
            reply = self._get(self.page, htmx=False)
            version = VERSION.search(reply.text)
            if version:
                self.version = version.group(1)
            found = shown(reply)
            if found is not None:
                return found
            time.sleep(PRESS_PAUSE_S)
        return None

    def prefetch(self, unit: int) -> Shown | None:
        return shown(self._get(f"{self.page}?after={unit}", htmx=True))

    def _post(self, on: Shown, value: int, showing: int | None) -> Reply:
        form: dict[str, object] = {
            "csrfmiddlewaretoken": on.csrf,
            "unit_id": on.unit,
            "request_key": on.key,
            "value": value,
            "comment": "",
            "guidelines_version": self.version,
        }
        if showing is not None:
            form["shown"] = showing
        reply = self.browser.request("POST", self.submit, form=form, headers={"HX-Request": "true"})
        self.replies.append(reply)
        return reply

    def _post_at_once(self, on: Shown, value: int, *, copies: int, showing: int | None) -> list[Reply]:
        if copies == 1:
            return [self._post(on, value, showing)]
        held: list[Reply] = []
        threads = [
            threading.Thread(target=lambda: held.append(self._post(on, value, showing)), daemon=True)
            for _ in range(copies)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return held

    def label(self, on: Shown, value: int, *, presses: int = 1, showing: int | None = None) -> Shown | None:
        """Post the label (``presses`` copies at once; ``showing``, the unit the page shows meanwhile),
        pressing again while no answer comes; the answer, None if the person gave up."""
        assert on.unit is not None
        for _ in range(PRESSES):
            self.posted += presses
            replies = self._post_at_once(on, value, copies=presses, showing=showing)
            answers = [found for reply in replies if (found := shown(reply)) is not None]
            if answers:
                accepted = [answer for answer in answers if not answer.refusal]
                for answer in answers:
                    if answer.refusal:
                        self.refusals[answer.refusal] += 1
                if accepted:
                    self.confirmed.add(on.unit)
                    self.labels_at.append(time.monotonic())
                    return accepted[0]
                return answers[0]
            time.sleep(PRESS_PAUSE_S)
        self.gave_up += 1
        return None

    def step(self, *, faulty: bool) -> bool:
        """Label the unit on screen; False when nothing is left for this person."""
        if self.current is None:
            self.current, self.ahead = self.open(), None
        on = self.current
        if on is None or on.unit is None:
            return False
        value = self.rng.choice(on.values or (0, 1))
        draw = self.rng.random() if faulty else 1.0
        if self.ahead is None:
            if DOUBLE_PRESS <= draw < DOUBLE_PRESS + PRESS_DURING_PREFETCH:
                # The key pressed before the unit ahead came back: a label without ``shown``, the
                # prefetch's answer thrown away (the page keeps it only while its unit is on screen).
                self.races += 1
                unit = on.unit
                thread = threading.Thread(target=lambda: self.prefetch(unit), daemon=True)
                thread.start()
                self.current = self.label(on, value)
                thread.join()
                return True
            # The page asks for the unit ahead once the unit on screen is painted.
            self.ahead = self.prefetch(on.unit)
        ahead, self.ahead = self.ahead, None
        if ahead is None or ahead.unit is None or ahead.refusal:
            ahead = None  # nothing ahead: the label's answer is the next unit
        presses = 2 if draw < DOUBLE_PRESS else 1
        self.doubles += presses == 2
        answer = self.label(on, value, presses=presses, showing=ahead.unit if ahead else None)
        if answer is None or answer.refusal or ahead is None:
            self.current = answer
            return True
        shows = after_answer(ahead=ahead.unit, unit=answer.unit, after=answer.after)
        if shows == "follows":
            self.current, self.ahead = ahead, answer
        else:
            self.current = ahead if shows == "ahead" else answer
        return True

    def work(self, *, until: float, faulty: bool, stop: threading.Event) -> None:
        while time.monotonic() < until and not stop.is_set():
            if not self.step(faulty=faulty):
                return


def together(people: list[Annotator], *, until: float, faulty: bool, stop: threading.Event) -> None:
    """Each person works in a thread of their own until ``until`` (or nothing is left); an
    interruption stops them all."""
    threads = [
        threading.Thread(target=p.work, kwargs={"until": until, "faulty": faulty, "stop": stop}, daemon=True)
        for p in people
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    except BaseException:
        stop.set()
        raise


def statuses(replies: list[Reply]) -> Counter[str]:
    return Counter("no answer" if r.status == 0 else str(r.status) for r in replies)


def describe(counts: Counter[str]) -> str:
    return ", ".join(f"{n} x {status}" for status, n in sorted(counts.items()))


# The world -----------------------------------------------------------------------------------


@dataclass
class World:
    plan: Plan
    rng: random.Random
    tmp: Path
    procs: Processes
    llm: ScriptedLLMServer
    env: dict[str, str]
    queue: str
    web: Web
    worker: subprocess.Popen
    # Django's models are imported once Django is set up: the campaigns and people are Any here.
    a: Any  # campaign A (review mode): judge runs, case 2's labels, case 3
    b: Any  # campaign B (blind double): case 4, case 3's labels
    manager: Any
    token: str
    annotators_a: list = field(default_factory=list)
    annotators_b: list = field(default_factory=list)
    finished_run: int | None = None

    def log(self, name: str) -> Path:
        return self.tmp / f"{name}.log"


def build(*, plan: Plan, rng: random.Random) -> dict:
    """Two campaigns, their samples and people; what the cases need."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    from annotation.corpus.campaigns import get_or_create_campaign
    from annotation.models import AnnotationMode, Criterion, Membership, Role, Unit
    from api.tokens import create_token
    from tests.factories import make_answer, sample_units

    a, _ = get_or_create_campaign(name="Faults A")
    b, _ = get_or_create_campaign(name="Faults B", annotation_mode=AnnotationMode.BLIND_DOUBLE)
    for campaign, answers in ((a, plan.answers), (b, plan.blind_units // 3)):
        for n in range(answers):
            figures = [rng.randint(2, 99) for _ in range(3)]
            sentences = [
                (f"Le chiffre d'affaires de l'unité {n} est de {figures[0]} M€ [^c1^].", ["c1"]),
                (f"Il progresse de {figures[1]} % sur l'exercice [^c2^].", ["c2"]),
                (f"La marge atteint {figures[2]} % [^c1^].", ["c1"]),
            ]
            make_answer(
                campaign=campaign,
                theme=THEMES[n % len(THEMES)],
                text=" ".join(text for text, _ in sentences),
                sentences=sentences,
            )
    for campaign, name, level in (
        (a, "veracity", "sentence"),
        (b, "veracity", "sentence"),
        (b, "relevance", "answer"),
    ):
        criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name=name)
        sample_units(
            criterion=criterion,
            units=list(Unit.objects.filter(campaign=campaign, level=level).order_by("pk")),
        )
    User = get_user_model()
    encoded = make_password(PASSWORD)  # hashed once: every account shares it

    def person(username: str, *, campaign=None, role: str = "", staff: bool = False):
        user = User.objects.create(username=username, password=encoded, is_staff=staff, is_superuser=staff)
        if campaign is not None:
            Membership.objects.create(campaign=campaign, user=user, role=role)
        return user

    manager = person("manager", staff=True)
    for campaign in (a, b):
        Membership.objects.create(campaign=campaign, user=manager, role=Role.MANAGER)
    return {
        "a": a,
        "b": b,
        "manager": manager,
        "token": create_token(user=manager, name="bench").secret,
        "annotators_a": [person(f"a{n}", campaign=a, role=Role.ANNOTATOR) for n in range(4)],
        "annotators_b": [person(f"b{n}", campaign=b, role=Role.ANNOTATOR) for n in range(8)],
    }


def llm_judge(world: World, name: str) -> None:
    from evaluation.judge import runs

    runs.get_or_create_judge(campaign=world.a, name=name, model="scripted", base_url=world.llm.base_url)


def run_of(run_id: int):
    from evaluation.models import JudgeRun

    return JudgeRun.objects.get(pk=run_id)


def judged_twice_or_missing(run) -> tuple[int, int]:
    """(units of the run's criterion without an ok judgment of its judge, judgments beyond one per unit)."""
    from annotation.models import Unit
    from evaluation.models import Judgment

    units = Unit.objects.filter(campaign_id=run.campaign_id, level=run.criterion.level)
    ok = Judgment.objects.filter(judge_id=run.judge_id, criterion_id=run.criterion_id, status="ok")
    missing = units.exclude(pk__in=ok.values("unit_id")).count()
    return missing, ok.count() - ok.values("unit_id").distinct().count()


def start_run(world: World, *, port: int, judge: str, criterion: str = "relevance", concurrency: int = 4):
    reply, data = api(
        port,
        "POST",
        f"/campaigns/{world.a.slug}/runs",
        world.token,
        {"criterion": criterion, "judge": judge, "concurrency": concurrency},
    )
    if reply.status != 202 or not data:
        raise RuntimeError(f"the run was not started: {reply.status} {reply.text[:300]}")
    return data["id"]


# Case 1 --------------------------------------------------------------------------------------


def is_judge_call(call) -> bool:
    """A request carrying a batch of units (the judge's prompt ends with its INDICES line); the
    run's preflight, one small call before the run starts, does not."""
    users = [m for m in call.body.get("messages", []) if m.get("role") == "user"]
    return (
        call.path.endswith("/chat/completions")
        and bool(users)
        and find_indices(str(users[-1].get("content"))) is not None
    )


def case_worker_killed(world: World) -> Row:
    from django.db.models import Count

    from evaluation.judge.accounting import prompt_sha256
    from evaluation.models import JudgeRun, LLMCall

    llm_judge(world, "gpt-kill")
    world.llm.latency_s = 0.25
    requests_before, served_before = len(world.llm.calls), world.llm.served_tokens
    run_id = start_run(world, port=world.web.port, judge="gpt-kill")
    # What the server served before the start answered and that is no judge call (the preflight)
    # is recorded nowhere by design; kept out of the comparison when it can be told apart.
    served_at_start, calls_at_start = world.llm.served_tokens, world.llm.calls[requests_before:]
    preflight = [call for call in calls_at_start if not is_judge_call(call)]
    apart = not any(is_judge_call(call) for call in calls_at_start)
    preflight_tokens = (
        tuple(a - b for a, b in zip(served_at_start, served_before, strict=True))
        if apart and preflight
        else (0, 0)
    )
    total = 0
    notes, cut = [], []
    killed_at = 0.0
    for k in range(world.plan.kills):
        share = (k + 1) / (world.plan.kills + 1)

        def far_enough(share: float = share) -> bool:
            run = run_of(run_id)
            return run.total_units > 0 and run.done_units >= share * run.total_units

        if not wait_until(far_enough, timeout=180, interval=0.05):
            return Row("1 worker kill -9 mid judge run", k, f"the run did not get {share:.0%} done in 180 s")
        # Mid-call: the kill waits (5 s at most) for a request to be at the server.
        wait_until(lambda: world.llm.in_flight > 0, timeout=5, interval=0.005)
        run = run_of(run_id)
        total = run.total_units
        cut.append(world.llm.in_flight)
        done_at_kill = run.done_units
        killed_at = time.monotonic()
        world.procs.kill(world.worker)
        if run_of(run_id).status == JudgeRun.Status.DONE:
            notes.append("the run ended before the kill")
        world.worker = start_worker(world.procs, world.env, name="w1", log=world.log("worker"))
        ready = time.monotonic() - killed_at

        def judging_again(done: int = done_at_kill) -> bool:
            return run_of(run_id).done_units > done

        wait_until(judging_again, timeout=120, interval=0.05)
        notes.append(
            f"kill at {done_at_kill}/{total} units ({cut[-1]} calls at the server), new worker ready "
            f"{ready:.1f} s and judging again {time.monotonic() - killed_at:.1f} s after the kill"
        )
    finished = wait_until(lambda: run_of(run_id).status == JudgeRun.Status.DONE, timeout=300, interval=0.1)
    recovered = time.monotonic() - killed_at
    wait_until(lambda: world.llm.in_flight == 0, timeout=30)
    time.sleep(1.5)  # the task that ends the run counts its totals again, once a second at most
    run = run_of(run_id)
    missing, doubled = judged_twice_or_missing(run)
    calls = [call for call in world.llm.calls[requests_before:] if is_judge_call(call)]
    served = tuple(
        now - before - probe
        for now, before, probe in zip(world.llm.served_tokens, served_before, preflight_tokens, strict=True)
    )
    rows = list(
        LLMCall.objects.filter(run_id=run_id).values(
            "prompt_sha256",
            "outcome",
            "used",
            "prompt_tokens",
            "completion_tokens",
            "estimated_prompt_tokens",
        )
    )
    asked = Counter(prompt_sha256(call.body.get("messages", [])) for call in calls)
    recorded_calls = Counter(row["prompt_sha256"] for row in rows)
    never_sent = recorded_calls - asked  # recorded, then killed before the request left
    not_recorded = asked - recorded_calls  # sent, and in no row: tokens paid and not counted
    replied = {row["prompt_sha256"]: row for row in rows if row["prompt_tokens"] is not None}

    def counted(sha: str) -> tuple[int, int]:
        # How the run counts a call whose reply it never saw (docs/judge.md): a reply to the
        # same prompt, else the estimate.
        row = replied.get(sha)
        if row is not None:
            return int(row["prompt_tokens"] or 0), int(row["completion_tokens"] or 0)
        return next(r["estimated_prompt_tokens"] for r in rows if r["prompt_sha256"] == sha), 0

    phantom = [sum(counted(sha)[i] * n for sha, n in never_sent.items()) for i in (0, 1)]
    stored_twice = (
        LLMCall.objects.filter(run_id=run_id, used=True)
        .values("batch_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count()
    )
    recorded = (run.prompt_tokens, run.completion_tokens)
    gap = (recorded[0] - served[0], recorded[1] - served[1])
    explained = gap == (phantom[0], phantom[1]) and not not_recorded
    world.finished_run = run_id if finished else None
    seen = (
        f"run {run.status}, {run.done_units}/{run.total_units} judged, {run.failed_units} failed; "
        + "; ".join(notes)
        + f"; {len(rows)} LLMCall rows ({describe(Counter(r['outcome'] for r in rows))}) for {len(calls)} "
        f"judge requests served: {sum(not_recorded.values())} sent without a row, "
        f"{sum(never_sent.values())} recorded but never received (killed between record and send); "
        f"run's tokens {recorded[0]}+{recorded[1]} vs served {served[0]}+{served[1]}"
        + (
            " (equal)"
            if gap == (0, 0)
            else f" ({gap[0]:+}+{gap[1]:+}: {'those rows' if explained else 'UNEXPLAINED'})"
        )
        + (
            f"; the start's preflight call ({len(preflight)}) left out, recorded nowhere by design"
            if preflight
            else ""
        )
    )
    return Row(
        "1 worker kill -9 mid judge run",
        world.plan.kills,
        seen,
        lost=missing + sum(not_recorded.values()),
        doubled=doubled + stored_twice + sum(never_sent.values()),
        recover=round(recovered, 1) if finished else "not done",
    )


# Case 2 --------------------------------------------------------------------------------------

OTHER_SESSIONS = "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"


def terminate_app_sessions() -> int:
    """End every session on the bench's database but this thread's own: gunicorn's and the worker's."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(pg_terminate_backend(pid)) {OTHER_SESSIONS}")
        return int(cursor.fetchone()[0])


def labels_lost_and_doubled(people: list[Annotator], *, criterion_id: int, stage: str) -> tuple[int, int]:
    """(labels a person saw accepted that the database lacks, labels beyond one per person and unit)."""
    from django.db.models import Count

    from annotation.models import Label

    rows = Label.objects.filter(criterion_id=criterion_id, stage=stage, value__isnull=False)
    stored = set(rows.values_list("user_id", "unit_id"))
    lost = sum(1 for p in people for unit in p.confirmed if (p.user_id, unit) not in stored)
    doubled = sum(
        n - 1 for n in rows.values("user_id", "unit_id").annotate(n=Count("id")).values_list("n", flat=True)
    )
    return lost, doubled


def back_after(people: list[Annotator], moment: float) -> float:
    """Seconds from ``moment`` until every person had an answer (200) to a request sent after it."""
    worst = 0.0
    for person in people:
        later = [r.ended for r in person.replies if r.started >= moment and r.status == 200]
        if later:
            worst = max(worst, min(later) - moment)
    return worst


def case_database_lost(world: World) -> Row:
    from annotation.models import Criterion

    llm_judge(world, "gpt-db")
    world.llm.latency_s = 0.4
    run_id = start_run(world, port=world.web.port, judge="gpt-db", concurrency=2)
    criterion = Criterion.objects.get(campaign=world.a, name="veracity")
    page = f"/campaigns/{world.a.slug}/annotate/veracity/label/"
    people = [
        Annotator(port=world.web.port, user=user, page=page, rng=random.Random(world.rng.random()))
        for user in world.annotators_a
    ]
    duration = world.plan.labelling_s
    stop = threading.Event()
    began = time.monotonic()
    threads = [
        threading.Thread(
            target=p.work, kwargs={"until": began + duration, "faulty": False, "stop": stop}, daemon=True
        )
        for p in people
    ]
    for thread in threads:
        thread.start()
    kills: list[tuple[float, int, int]] = []  # (when, sessions ended, judged units then)
    progress: list[tuple[float, int]] = []
    moments = [began + duration / 3, began + 2 * duration / 3]
    try:
        while time.monotonic() < began + duration:
            done = run_of(run_id).done_units
            progress.append((time.monotonic(), done))
            if moments and time.monotonic() >= moments[0]:
                moments.pop(0)
                kills.append((time.monotonic(), terminate_app_sessions(), done))
            time.sleep(0.1)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
    ended = time.monotonic()
    finished = wait_until(lambda: not run_of(run_id).is_active, timeout=300, interval=0.1)
    run_done_after = time.monotonic() - kills[-1][0]
    while time.monotonic() - ended < 0.5:
        progress.append((time.monotonic(), run_of(run_id).done_units))
    replies = [r for p in people for r in p.replies]
    counts = statuses(replies)
    lost, doubled = labels_lost_and_doubled(people, criterion_id=criterion.pk, stage="label")
    judging_again = []
    for when, _, done in kills:
        later = [t for t, d in progress if t > when and d > done]
        judging_again.append(f"{min(later) - when:.1f}" if later else "-")
    run = run_of(run_id)
    missing, twice = judged_twice_or_missing(run)
    labelled = sum(len(p.confirmed) for p in people)
    failed = [r for r in replies if r.status >= 500 or r.status == 0]
    in_flight = sum(1 for r in failed if any(r.started < when <= r.ended for when, _, _ in kills))
    served_again = max(back_after(people, when) for when, _, _ in kills)
    seen = (
        f"{labelled} labels by 4 people in {duration:.0f} s, sessions ended {[n for _, n, _ in kills]}; "
        f"answers {describe(counts)}: {in_flight} of the failures were in flight when the sessions "
        f"ended, {len(failed) - in_flight} sent after; "
        f"presses given up {sum(p.gave_up for p in people)}; every person served again within "
        f"{served_again:.1f} s; judge run {run.status} {run.done_units}/{run.total_units} "
        f"({run.failed_units} failed), judging again {', '.join(judging_again)} s after each end, "
        f"done {run_done_after:.1f} s after the second"
    )
    return Row(
        "2 PostgreSQL sessions ended mid-labelling and mid-judging",
        len(kills),
        seen,
        lost=lost + missing,
        doubled=doubled + twice,
        recover=round(max(served_again, run_done_after if finished else float("inf")), 1),
    )


# Case 3 --------------------------------------------------------------------------------------


def pending_work(campaign_ids: list[int]) -> int:
    """Runs, samples and answer batches of these campaigns still pending or running."""
    from annotation.models import Sample
    from api.models import AnswerBatch
    from evaluation.models import JudgeRun

    active = ("pending", "running")
    return (
        JudgeRun.objects.filter(campaign_id__in=campaign_ids, status__in=active).count()
        + Sample.objects.filter(campaign_id__in=campaign_ids, status__in=active).count()
        + AnswerBatch.objects.filter(campaign_id__in=campaign_ids, status__in=active).count()
    )


WORKER_LOG_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}): INFO/MainProcess\] Connected to ")


def reconnected(log: Path, *, after: float) -> str:
    """Seconds from ``after`` (a wall-clock time) until the worker's log says it connected to the
    broker again, as text."""
    from datetime import datetime

    for line in log.read_text(errors="replace").splitlines():
        found = WORKER_LOG_LINE.match(line)
        if found:
            when = datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            if when >= after - 0.5:
                return f"{max(0.0, when - after):.1f} s"
    return "never"


def case_queue_down(world: World, *, variant: str) -> Row:
    """Redis, the broker (and in variant b the cache too), stopped mid-run and started again."""
    from annotation.models import Criterion, Sample
    from evaluation.models import JudgeRun

    cache_too = variant == "b"
    title = f"3{variant} Redis broker {'and cache ' if cache_too else ''}down, started again"
    redis = OwnRedis(world.procs, world.tmp / f"redis-{variant}")
    redis.start()
    env = {
        **world.env,
        "CELERY_BROKER_URL": redis.url(REDIS_DB),
        "CELERY_QUEUE": f"{world.queue}-{variant}",
        "CACHE_URL": redis.url(REDIS_DB - 1) if cache_too else world.env["CACHE_URL"],
    }
    web = start_web(world.procs, env, log=world.log(f"gunicorn-{variant}"), workers=1, threads=8)
    worker = start_worker(world.procs, env, name=f"w3{variant}", log=world.log(f"worker-{variant}"))
    try:
        asked_since = JudgeRun.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        samples_since = Sample.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        judge = f"gpt-redis-{variant}"
        llm_judge(world, judge)
        world.llm.latency_s = 0.25
        first = start_run(world, port=web.port, judge=judge)
        wait_until(lambda: run_of(first).done_units >= 0.25 * max(1, run_of(first).total_units), timeout=120)
        redis.stop()
        down = time.monotonic()
        slug = world.a.slug
        manager = Browser(web.port).log_in(world.manager)
        seen: list[str] = []
        tries = 0

        def page_post(page: str, path: str, form: dict[str, object], what: str) -> None:
            nonlocal tries
            csrf = csrf_of(manager.request("GET", page).text)
            reply = manager.request("POST", path, form={"csrfmiddlewaretoken": csrf, **form})
            tries += 1
            said = "says it starts by itself" if "starts by itself" in reply.text else "no such message"
            seen.append(f"page {what} {reply.status} in {reply.seconds:.1f} s ({said})")

        def api_call(method: str, path: str, payload: object, what: str) -> None:
            nonlocal tries
            reply, data = api(web.port, method, path, world.token, payload)
            tries += 1
            kind = (
                "JSON" if reply.headers.get("content-type", "").startswith("application/json") else "not JSON"
            )
            detail = (data or {}).get("detail", "") if isinstance(data, dict) else ""
            after = reply.headers.get("retry-after")
            seen.append(
                f"API {what} {reply.status} {kind} in {reply.seconds:.1f} s"
                + (f" '{detail}'" if detail else "")
                + (f" Retry-After {after}" if after else "")
            )

        runs_page = f"/campaigns/{slug}/judge/"
        page_post(runs_page, runs_page, {"criterion": "veracity", "judge": "lexical", "scope": "all"}, "run")
        page_post(
            f"/campaigns/{slug}/sampling/",
            f"/campaigns/{slug}/sampling/draw/",
            {"criterion": "relevance", "budget": 12, "per_cluster": 1, "seed": 3},
            "sample",
        )
        api_call("POST", f"/campaigns/{slug}/runs", {"criterion": "relevance", "judge": "lexical"}, "run")
        api_call(
            "POST",
            f"/campaigns/{slug}/samples",
            {"criterion": "veracity", "budget": 12, "per_cluster": 1, "seed": 5},
            "sample",
        )
        api_call("GET", f"/campaigns/{slug}/runs/{first}", None, "run status")
        person = Annotator(
            port=web.port,
            user=world.annotators_b[0 if variant == "a" else 1],
            page=f"/campaigns/{world.b.slug}/annotate/relevance/label/",
            rng=random.Random(world.rng.random()),
        )
        for _ in range(3):
            person.step(faulty=False)
        tries += len(person.replies)
        slowest = max((r.seconds for r in person.replies), default=0)
        seen.append(f"labelling {describe(statuses(person.replies))}, slowest {slowest:.1f} s")
        time.sleep(max(0.0, down + world.plan.outage_s - time.monotonic()))
        redis.start()
        back, back_wall = time.monotonic(), time.time()
        runs = JudgeRun.objects.filter(campaign=world.a, pk__gt=asked_since)
        samples = Sample.objects.filter(campaign=world.a, pk__gt=samples_since)
        settled = wait_until(lambda: pending_work([world.a.pk, world.b.pk]) == 0, timeout=300, interval=0.2)
        recovered = time.monotonic() - back
        missing = doubled = 0
        for run in runs:
            if run.status == JudgeRun.Status.DONE:
                m, d = judged_twice_or_missing(run)
                missing, doubled = missing + m, doubled + d
        summary = (
            f"recorded while down: {runs.count() - 1} runs, {samples.count()} samples; after: runs "
            f"{describe(Counter(r.status for r in runs))}, "
            f"samples {describe(Counter(s.status for s in samples))}; "
            f"pending or running {pending_work([world.a.pk, world.b.pk])}"
        )
        lost_labels, doubled_labels = labels_lost_and_doubled(
            [person], criterion_id=Criterion.objects.get(campaign=world.b, name="relevance").pk, stage="label"
        )
        return Row(
            title,
            tries,
            "; ".join(seen)
            + f"; Redis down {world.plan.outage_s:.0f} s, the worker connected again "
            + f"{reconnected(world.log(f'worker-{variant}'), after=back_wall)} after its restart; "
            + summary,
            lost=missing + lost_labels + (0 if settled else pending_work([world.a.pk, world.b.pk])),
            doubled=doubled + doubled_labels,
            recover=round(recovered, 1) if settled else "never",
        )
    finally:
        world.procs.stop(worker)
        world.procs.stop(web.process)
        redis.stop()


# Case 4 --------------------------------------------------------------------------------------


def case_blind_rush(world: World) -> Row:
    from django.db.models import Count
    from django.utils import timezone

    from annotation.models import Assignment, Criterion, Label, SampleItem

    criterion = Criterion.objects.get(campaign=world.b, name="veracity")
    page = f"/campaigns/{world.b.slug}/annotate/veracity/label/"
    people = [
        Annotator(port=world.web.port, user=user, page=page, rng=random.Random(world.rng.random()))
        for user in world.annotators_b
    ]
    stop = threading.Event()
    began = time.monotonic()
    until = began + world.plan.rush_s
    together(people, until=until, faulty=True, stop=stop)
    rushed = time.monotonic() - began
    in_rush = sum(1 for p in people for t in p.labels_at if t <= until)
    # Then everyone finishes the queue, without faults.
    drained_from = time.monotonic()
    together(people, until=float("inf"), faulty=False, stop=stop)
    drained = time.monotonic() - drained_from
    lost, doubled = labels_lost_and_doubled(people, criterion_id=criterion.pk, stage="label")
    both_slots = (
        Assignment.objects.filter(criterion=criterion, stage="label")
        .values("unit_id", "user_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count()
    )
    units = list(SampleItem.objects.filter(sample__criterion=criterion).values_list("unit_id", flat=True))
    by_unit: dict[int, list[int]] = {u: [] for u in units}
    for unit_id, user_id in Label.objects.filter(
        criterion=criterion, stage="label", value__isnull=False
    ).values_list("unit_id", "user_id"):
        by_unit.setdefault(unit_id, []).append(user_id)
    two_by_two = sum(1 for u in units if len(by_unit[u]) == 2 and len(set(by_unit[u])) == 2)
    leases_left = Assignment.objects.filter(
        criterion=criterion, label__isnull=True, expires_at__gt=timezone.now()
    ).count()
    replies = [r for p in people for r in p.replies]
    refusals = sum((p.refusals for p in people), Counter())
    posted = sum(p.posted for p in people)
    seen = (
        f"{in_rush} labels in {rushed:.0f} s ({in_rush / rushed:.1f}/s) with "
        f"{sum(p.doubles for p in people)} double presses and {sum(p.races for p in people)} presses "
        f"during a prefetch, then the queue finished in {drained:.0f} s; "
        f"answers {describe(statuses(replies))}; refusals "
        + (", ".join(f"{n} x '{m}'" for m, n in refusals.most_common()) or "none")
        + f"; people holding both slots of a unit {both_slots}; units with two labels from two people "
        f"{two_by_two}/{len(units)}; leases left {leases_left}"
    )
    return Row(
        "4 8 blind annotators, double presses, presses during prefetch",
        posted,
        seen,
        lost=lost + (len(units) - two_by_two),
        doubled=doubled + both_slots,
    )


# Case 5 --------------------------------------------------------------------------------------


def app_rows() -> int:
    """Rows in the app's data tables (what an import, a label or a run writes)."""
    from annotation.models import (
        Answer,
        AnswerSource,
        Campaign,
        Label,
        Question,
        Sample,
        SampleItem,
        Sentence,
        SourceChunk,
        Unit,
    )
    from api.models import AnswerBatch
    from evaluation.models import JudgeBatch, JudgeRun, Judgment, LLMCall

    models = (
        Campaign,
        Question,
        Answer,
        AnswerSource,
        SourceChunk,
        Sentence,
        Unit,
        Label,
        Sample,
        SampleItem,
    )
    return sum(m.objects.count() for m in (*models, AnswerBatch, JudgeRun, JudgeBatch, Judgment, LLMCall))


def web_peak_mb(web: Web) -> float:
    return sum(peak_rss_mb(pid) for pid in [web.process.pid, *web.workers()])


def bomb(path: Path, *, megabytes: int) -> Path:
    """A valid workbook plus one member of ``megabytes`` MB of a repeated cell, deflated."""
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["question_id", "question", "theme", "difficulty", "answer"])
    sheet.append(["QB", "Une question ?", "Finance", "simple", "Une réponse [^c1^]."])
    book.save(path)
    block = b"<c><v>a</v></c>" * 69906  # about 1 MB
    with (
        zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive,
        archive.open("xl/worksheets/sheet2.xml", "w", force_zip64=True) as member,
    ):
        for _ in range(megabytes):
            member.write(block)
    return path


def upload(world: World, browser: Browser, filename: str, data: bytes) -> tuple[Reply, int, float]:
    """The manager's import page posts ``data`` as ``filename`` into campaign A: the reply, rows
    written, and the growth of the web processes' peak memory (MB)."""
    page = f"/campaigns/{world.a.slug}/import/"
    csrf = csrf_of(browser.request("GET", page).text)
    body, kind = multipart({"csrfmiddlewaretoken": csrf}, {"file": (filename, data)})
    rows, peak = app_rows(), web_peak_mb(world.web)
    reply = browser.request("POST", page, body=body, headers={"Content-Type": kind})
    return reply, app_rows() - rows, web_peak_mb(world.web) - peak


IMPORT_ERROR = re.compile(
    r"<tr><td>[^<]*</td><td class=\"num\">([^<]*)</td><td><code>([^<]*)</code></td><td>([^<]*)</td></tr>"
)


def error_text(reply: Reply) -> str:
    """The import page's first error (row, field, message), as the person reads it."""
    found = IMPORT_ERROR.search(reply.text)
    if found is None:
        return ""
    row, name, message = (html.unescape(part) for part in found.groups())
    return f"row {row}, {name}: {message[:110]}"


def bad_bomb(world: World, manager: Browser) -> Row:
    """Two bombs: one past IMPORT_MAX_BYTES unpacked (200 MiB), one under it but a thousand times
    its packed size."""
    seen, written = [], 0
    for megabytes in BOMB_MEGABYTES:
        path = bomb(world.tmp / "bomb.xlsx", megabytes=megabytes)
        packed = path.stat().st_size
        reply, rows, grown = upload(world, manager, "answers.xlsx", path.read_bytes())
        path.unlink()
        written += rows
        seen.append(
            f"{packed / 1024:.0f} KB unpacking to {megabytes} MB: {reply.status} in {reply.seconds:.2f} s, "
            f"'{error_text(reply) or reply.text[:80]}', web processes' peak memory +{grown:.0f} MB"
        )
    return Row(
        "5a XLSX decompression bombs on the import page",
        len(BOMB_MEGABYTES),
        "; ".join(seen),
        written=written,
    )


def bad_nul(world: World, manager: Browser) -> list[Row]:
    from annotation.models import Answer, Question

    record = {
        "question_id": "QNUL",
        "question": "Une question\u0000 avec NUL ?",
        "theme": "Finance",
        "difficulty": "simple",
        "answer": "Avant\u0000après, sans NUL [^n1^].",
        "sources": [{"id": "n1", "title": "Doc\u0000.pdf", "page": 1, "text": "Texte\u0000 source."}],
    }
    escaped = (json.dumps(record) + "\n").encode()
    raw_record = dict(record, question_id="QNUL2")
    raw = (json.dumps(raw_record) + "\n").encode().replace(b"\\u0000", b"\x00")
    seen, written = [], 0
    for name, data in (("escaped \\u0000", escaped), ("raw NUL byte", raw)):
        reply, rows, _ = upload(world, manager, "nul.jsonl", data)
        written += rows
        said = f" '{error_text(reply)}'" if reply.status != 200 else ""
        seen.append(f"{name}: {reply.status} in {reply.seconds:.2f} s{said}, {rows} rows")
    kept = list(
        Answer.objects.filter(question__external_id__startswith="QNUL").values_list("text", flat=True)
    )
    kept += list(Question.objects.filter(external_id__startswith="QNUL").values_list("text", flat=True))
    clean = all(NUL not in text for text in kept) and any("Avantaprès" in text for text in kept)
    import_row = Row(
        "5b NUL characters in an import (page)",
        2,
        "; ".join(seen) + f"; stored texts without NUL: {'yes' if clean else 'NO'} ({len(kept)} texts)",
        written=written,
    )
    rows = app_rows()
    api_record = dict(record, question_id="QNUL3")
    reply, data = api(
        world.web.port, "POST", f"/campaigns/{world.a.slug}/answers", world.token, {"records": [api_record]}
    )
    query, _ = api(
        world.web.port, "GET", f"/campaigns/{world.a.slug}/labels?criterion=veraci%00ty", world.token
    )
    raw_reply, _ = api(
        world.web.port,
        "POST",
        f"/campaigns/{world.a.slug}/samples",
        world.token,
        raw=b'{"criterion": "relev\x00ance", "budget": 3}',
    )
    stored = list(Answer.objects.filter(question__external_id="QNUL3").values_list("text", flat=True))
    kept_clean = "yes" if stored and NUL not in stored[0] else "NO"
    refusal = raw_reply.text[:120] if raw_reply.status != 200 else ""
    api_row = Row(
        "5c NUL characters in API bodies and queries",
        3,
        f"answers with \\u0000 {reply.status} (stored without NUL: {kept_clean}); "
        f"a query with %00 {query.status}; a raw NUL byte in a JSON body {raw_reply.status} {refusal}",
        written=app_rows() - rows,
    )
    return [import_row, api_row]


def bad_nesting(world: World, manager: Browser) -> Row:
    deep = "[" * 100_000 + "]" * 100_000
    path = world.tmp / "label-studio.json"
    path.write_text('[{"data": {"answer_id": "A1"}}, {"metadata": ' + deep + "}]", encoding="utf-8")
    rows = app_rows()
    began = time.monotonic()
    command = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "import_labels",
            str(path),
            "--format",
            "label-studio",
            "--campaign",
            "Faults A",
        ],
        cwd=ROOT,
        env=world.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    took = time.monotonic() - began
    path.unlink()
    said = (command.stderr.strip().splitlines() or [""])[-1][-160:]
    crashed = "Traceback" in command.stderr or "RecursionError" in command.stderr
    written = app_rows() - rows
    reply, page_rows, _ = upload(world, manager, "deep.json", ('[{"question_id": ' + deep + "}]").encode())
    return Row(
        "5d deeply nested JSON (Label Studio import, import page)",
        2,
        f"import_labels exit {command.returncode} in {took:.1f} s, "
        f"{'a traceback' if crashed else 'no traceback'}: "
        f"'{said}'; the import page {reply.status} '{error_text(reply)}'",
        written=written + page_rows,
    )


def bad_upload(world: World) -> Row:
    """An anonymous 150 MB upload to the new-campaign import page, sent as fast as the server takes it."""
    port = world.web.port
    boundary = "bench" + uuid.uuid4().hex
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="campaign"\r\n\r\nBig\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.jsonl"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    length = len(head) + UPLOAD_BYTES + len(tail)
    spool = Path(world.env["TMPDIR"])
    spooled = [0]
    watching = threading.Event()

    def watch() -> None:
        while not watching.is_set():
            size = sum(f.stat().st_size for f in spool.rglob("*") if f.is_file())
            spooled[0] = max(spooled[0], size)
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    cpu = {pid: cpu_seconds(pid) for pid in world.web.workers()}
    rows, peak = app_rows(), web_peak_mb(world.web)
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(
        f"POST /campaigns/import/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {length}\r\n\r\n".encode()
        + head
    )
    sock.setblocking(False)
    began = time.monotonic()
    sent, answer, first_at, first_sent, closed = 0, b"", 0.0, 0, ""
    block = b"x" * 65536
    while sent < UPLOAD_BYTES:
        readable, writable, _ = select.select([sock], [sock], [], 5)
        if not readable and not writable:
            closed = "the server stopped reading (5 s without taking a byte)"
            break
        if readable:
            try:
                data = sock.recv(65536)
            except OSError as exc:
                closed = exc.__class__.__name__
                break
            if not data:
                closed = "closed by the server"
                break
            if not answer:
                first_at, first_sent = time.monotonic() - began, sent
            answer += data
        if writable:
            try:
                sent += sock.send(block[: UPLOAD_BYTES - sent])
            except OSError as exc:
                closed = exc.__class__.__name__
                break
    if not closed:
        with contextlib.suppress(OSError):
            sock.setblocking(True)
            sock.settimeout(10)
            sock.sendall(tail)
            while chunk := sock.recv(65536):
                if not answer:
                    first_at, first_sent = time.monotonic() - began, sent
                answer += chunk
        closed = "body sent whole"
    sock.close()
    took = time.monotonic() - began
    time.sleep(0.3)
    watching.set()
    watcher.join()
    status_line = answer.split(b"\r\n", 1)[0].decode(errors="replace")
    location = re.search(rb"\r\nLocation: ([^\r]+)", answer)
    busy = sum(cpu_seconds(pid) - before for pid, before in cpu.items())
    return Row(
        "5e anonymous 150 MB upload to /campaigns/import/",
        1,
        f"'{status_line}' to {location.group(1).decode() if location else '-'} "
        f"after {first_at * 1000:.0f} ms, when {first_sent / 1e6:.1f} MB had been taken (socket buffers "
        f"included); then {closed} after {sent / 1e6:.1f} MB in {took:.1f} s; spooled to disk "
        f"{spooled[0] / 1e6:.1f} MB; web CPU {busy:.2f} s; "
        f"peak memory +{web_peak_mb(world.web) - peak:.0f} MB",
        written=app_rows() - rows,
    )


def bad_slow_clients(world: World) -> Row:
    port = world.web.port
    stop = threading.Event()
    slow = [threading.Thread(target=slow_client, args=(port, stop), daemon=True) for _ in range(6)]
    for thread in slow:
        thread.start()
    time.sleep(1.5)
    asked, times = 0, []
    end = time.monotonic() + world.plan.slow_s
    while time.monotonic() < end:
        asked += 1
        reply = Browser(port).request("GET", "/login/", timeout=5)
        if reply.status == 200:
            times.append(reply.seconds)
        time.sleep(0.2)
    stop.set()
    median = f"{statistics.median(times) * 1000:.0f} ms" if times else "-"
    worst = f"{max(times) * 1000:.0f} ms" if times else "-"
    return Row(
        "5f 6 slow anonymous clients (a byte every 0.5 s)",
        asked,
        f"another client answered {len(times)}/{asked} times in {world.plan.slow_s:.0f} s, "
        f"median {median}, worst {worst}",
        written=0,
    )


def bad_sql(world: World) -> Row:
    import psycopg

    if world.finished_run is None:
        return Row(
            "5g finished run's cost rewritten in SQL", 0, "no finished run to rewrite (case 1 did not finish)"
        )
    run = run_of(world.finished_run)
    outcomes = []
    attempts = [
        ("cost lowered", f"UPDATE evaluation_judgerun SET cost = cost / 1000 WHERE id = {run.pk}", ""),
        ("tokens lowered", f"UPDATE evaluation_judgerun SET prompt_tokens = 1 WHERE id = {run.pk}", ""),
        (
            "a replied call's tokens",
            "UPDATE evaluation_llmcall SET prompt_tokens = 0 "
            f"WHERE run_id = {run.pk} AND outcome = 'replied'",
            "",
        ),
        ("a snapshot", "UPDATE evaluation_reportsnapshot SET created_at = now()", ""),
        ("cost raised", f"UPDATE evaluation_judgerun SET cost = cost * 10 + 1 WHERE id = {run.pk}", ""),
        (
            "cost lowered with attest.recount on",
            f"UPDATE evaluation_judgerun SET cost = 0 WHERE id = {run.pk}",
            "SELECT set_config('attest.recount', 'on', true)",
        ),
    ]
    with psycopg.connect(
        host=str(PG["host"]), port=int(str(PG["port"])), user=str(PG["user"]), dbname=DATABASE
    ) as conn:
        for what, statement, before in attempts:
            try:
                with conn.transaction():
                    if before:
                        conn.execute(before)
                    changed = conn.execute(statement).rowcount
                    # Nothing is kept: the bench looks, then rolls back.
                    raise _RolledBack(changed)
            except _RolledBack as rolled:
                outcomes.append(f"{what}: accepted ({rolled.changed} rows, rolled back by the bench)")
            except psycopg.Error as exc:
                outcomes.append(f"{what}: refused ({str(exc).splitlines()[0][:60]})")
    after = run_of(world.finished_run)
    unchanged = (after.cost, after.prompt_tokens) == (run.cost, run.prompt_tokens)
    return Row(
        "5g finished run's spend rewritten in SQL",
        len(attempts),
        f"run cost {run.cost:.4f}: "
        + "; ".join(outcomes)
        + f"; run unchanged: {'yes' if unchanged else 'NO'}",
        written=0 if unchanged else 1,
    )


class _RolledBack(Exception):
    def __init__(self, changed: int) -> None:
        super().__init__(changed)
        self.changed = changed


def bad_tokens(world: World) -> list[Row]:
    from datetime import timedelta

    from django.utils import timezone

    from api.models import ApiToken
    from api.tokens import create_token

    user = world.annotators_a[0]
    expiring = create_token(user=user, name="expiring")
    before, _ = api(world.web.port, "GET", "/campaigns", expiring.secret)
    ApiToken.objects.filter(pk=expiring.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    after, _ = api(world.web.port, "GET", "/campaigns", expiring.secret)
    expired = Row(
        "5h expired API token",
        2,
        f"before its end {before.status}, after {after.status} "
        f"(WWW-Authenticate: {after.headers.get('www-authenticate', '-')})",
        written=0,
    )
    owner = world.annotators_a[1]
    token = create_token(user=owner, name="password")
    before, _ = api(world.web.port, "GET", "/campaigns", token.secret)
    owner.set_password(PASSWORD + "-new")
    owner.save()
    after, _ = api(world.web.port, "GET", "/campaigns", token.secret)
    why = ApiToken.objects.get(pk=token.token.pk).revoked_because or "not revoked"
    changed = Row(
        "5i API token after a password change",
        2,
        f"before {before.status}, after {after.status} (revoked because: {why})",
        written=0,
    )
    return [expired, changed]


def burst(port: int, secret: str, *, requests: int, at_once: int) -> list[Reply]:
    """``requests`` API reads with one token, ``at_once`` at a time, each on a new connection."""
    replies: list[Reply] = []
    left = iter(range(requests))
    lock = threading.Lock()

    def send() -> None:
        while True:
            with lock:
                if next(left, None) is None:
                    return
            reply, _ = api(port, "GET", "/campaigns", secret)
            with lock:
                replies.append(reply)

    senders = [threading.Thread(target=send, daemon=True) for _ in range(at_once)]
    for thread in senders:
        thread.start()
    for thread in senders:
        thread.join()
    return replies


def bad_rate(world: World) -> list[Row]:
    """One token's requests across both gunicorn processes, which count them in the shared cache:
    130 one after another, 130 and 300 eight at a time (a client with a thread pool)."""
    from api.tokens import create_token

    rows = []
    for requests, at_once in ((130, 1), (130, 8), (300, 8)):
        secret = create_token(user=world.manager, name=f"rate {requests} {at_once}").secret
        cpu = {pid: cpu_seconds(pid) for pid in world.web.workers()}
        began = time.monotonic()
        replies = burst(world.web.port, secret, requests=requests, at_once=at_once)
        took = time.monotonic() - began
        busy = [cpu_seconds(pid) - before for pid, before in cpu.items()]
        how = "one after another" if at_once == 1 else f"{at_once} at a time"
        rows.append(
            Row(
                f"5j {requests} API requests, one token, {how}",
                requests,
                f"{describe(statuses(replies))} in {took:.1f} s (limit 120 a minute: "
                f"{requests - 120} x 429 expected); CPU of the two gunicorn processes "
                f"{', '.join(f'{b:.2f}' for b in busy)} s",
                written=0,
            )
        )
    return rows


def bad_lockout(world: World) -> Row:
    from django.contrib.auth import get_user_model

    User = get_user_model()
    for name in ("locked", "colleague"):
        User.objects.create_user(username=name, password=PASSWORD)

    def log_in(username: str, password: str) -> int:
        browser = Browser(world.web.port)
        csrf = csrf_of(browser.request("GET", "/login/").text)
        reply = browser.request(
            "POST", "/login/", form={"csrfmiddlewaretoken": csrf, "username": username, "password": password}
        )
        return reply.status

    rows = app_rows()
    wrong = [log_in("locked", "not-the-password") for _ in range(5)]
    right = log_in("locked", PASSWORD)
    other = log_in("colleague", PASSWORD)
    return Row(
        "5k lockout of one username, another account behind the same address",
        7,
        f"5 wrong passwords {wrong}; then the right one {right}; the colleague at the same address {other}",
        written=app_rows() - rows,
    )


def case_bad_inputs(world: World) -> list[Row]:
    manager = Browser(world.web.port).log_in(world.manager)
    rows: list[Row] = []
    for step in (
        lambda: [bad_bomb(world, manager)],
        lambda: bad_nul(world, manager),
        lambda: [bad_nesting(world, manager)],
        lambda: [bad_upload(world)],
        lambda: [bad_slow_clients(world)],
        lambda: [bad_sql(world)],
        lambda: bad_tokens(world),
        lambda: bad_rate(world),
        lambda: [bad_lockout(world)],
    ):
        rows.extend(guarded("5 bad input", step))
    return rows


# Running it ----------------------------------------------------------------------------------


def guarded(case: str, step: Callable[[], list[Row]]) -> list[Row]:
    """The case's rows, or one row saying how the bench itself failed (the table is printed anyway)."""
    try:
        return step()
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # reported in the table, not hidden
        return [Row(case, "-", f"bench error: {exc.__class__.__name__}: {str(exc)[:300]}")]


def table(rows: list[Row]) -> str:
    headers = ["case", "tries", "what the person saw", "lost", "doubled", "written", "recover s"]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for row in rows:
        cells = [row.case, row.tries, row.seen, row.lost, row.doubled, row.written, row.recover]
        lines.append("| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |")
    return "\n".join(lines)


def logged_errors(tmp: Path) -> list[str]:
    """The exceptions the servers and workers logged with a traceback, counted per log and kind
    (of a chain of exceptions, the last one)."""
    found: Counter[str] = Counter()
    for log in sorted(tmp.rglob("*.log")):
        lines = log.read_text(errors="replace").splitlines()
        for n, line in enumerate(lines):
            if not line.startswith("Traceback (most recent call last)"):
                continue
            for m in range(n + 1, min(n + 500, len(lines))):
                if lines[m] and not lines[m].startswith((" ", "\t")):
                    # A message may go on over indented lines; a chain says so before its next traceback.
                    after = [x for x in lines[m + 1 : m + 10] if x.strip() and not x.startswith((" ", "\t"))]
                    if not after or not after[0].startswith(("During handling", "The above exception")):
                        found[f"{log.stem}: {lines[m][:150]}"] += 1
                    break
    return [f"{n} x {what}" for what, n in found.most_common()]


def keep_logs(tmp: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for log in tmp.rglob("*.log"):
        shutil.copy(log, target / log.name)


def _quiet(self: object, request: object, client_address: object) -> None:
    """A worker killed mid-call resets its connection to the LLM server: expected here, not printed."""


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="smaller campaigns, shorter phases (about 3 minutes)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", default="1,2,3,4,5", help="the cases to run, such as 1,5 (default: all)")
    parser.add_argument("--logs", type=Path, help="a directory to copy the servers' and workers' logs to")
    args = parser.parse_args()
    plan = QUICK if args.quick else FULL
    rng = random.Random(args.seed)
    only = set(args.only.split(","))
    for needed in ("redis-server",):
        if shutil.which(needed) is None:
            print(f"needs {needed}")
            return 2
    signal.signal(signal.SIGTERM, _interrupted)
    llm_server._HTTPServer.handle_error = _quiet  # type: ignore[method-assign]
    signal.signal(signal.SIGHUP, _interrupted)
    began = time.monotonic()
    rows: list[Row] = []
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="attest-faults-")))
        (tmp / "var").mkdir()
        (tmp / "app-tmp").mkdir()
        queue = f"attest-faults-{os.getpid()}"
        machine = f"redis://{REDIS_HOST}:{REDIS_PORT}/{REDIS_DB}"
        os.environ.update(
            {
                "VAR_DIR": str(tmp / "var"),
                "SECRET_KEY": secrets.token_urlsafe(50),
                "DEBUG": "0",
                "ALLOWED_HOSTS": "127.0.0.1,localhost",
                "CELERY_BROKER_URL": machine,
                "CACHE_URL": machine,
                "CELERY_QUEUE": queue,
                "CELERY_TASK_ALWAYS_EAGER": "0",
                "OPENAI_API_KEY": "bench",
                "JUDGE_PRICE_PER_1K_PROMPT": "0.15",
                "JUDGE_PRICE_PER_1K_COMPLETION": "0.6",
            }
        )
        stack.enter_context(machine_redis_cleaned())
        engine = stack.enter_context(bench_database(DATABASE))
        if engine != "postgresql":
            print("needs PostgreSQL on 127.0.0.1:5432 (pg_terminate_backend, the audit triggers)")
            return 2
        procs = Processes()
        if args.logs:
            stack.callback(keep_logs, tmp, args.logs)
        stack.callback(procs.close)
        llm = stack.enter_context(ScriptedLLMServer(latency_s=0.25))
        env = {
            **os.environ,
            "OPENAI_BASE_URL": llm.base_url,
            "DB_CONN_MAX_AGE": "600",
            "TMPDIR": str(tmp / "app-tmp"),
            "LOG_LEVEL": "INFO",
        }
        made = build(plan=plan, rng=rng)
        print(
            f"{'quick' if args.quick else 'full'} run, seed {args.seed}; "
            f"built in {time.monotonic() - began:.0f} s"
        )
        web = start_web(procs, env, log=tmp / "gunicorn.log")
        worker = start_worker(procs, env, name="w1", log=tmp / "worker.log")
        world = World(
            plan=plan,
            rng=rng,
            tmp=tmp,
            procs=procs,
            llm=llm,
            env=env,
            queue=queue,
            web=web,
            worker=worker,
            **made,
        )
        print(f"servers up at {time.monotonic() - began:.0f} s")
        for name, step in (
            ("1", lambda: [case_worker_killed(world)]),
            ("2", lambda: [case_database_lost(world)]),
            ("4", lambda: [case_blind_rush(world)]),
            ("5", lambda: case_bad_inputs(world)),
        ):
            if name not in only:
                continue
            started = time.monotonic()
            rows.extend(guarded(name, step))
            print(f"case {name} done in {time.monotonic() - started:.0f} s", flush=True)
        # The main servers leave the machine to case 3's own.
        procs.stop(world.worker)
        procs.stop(web.process)
        for variant in ("a", "b") if "3" in only else ():
            started = time.monotonic()

            def queue_down(variant: str = variant) -> list[Row]:
                return [case_queue_down(world, variant=variant)]

            rows.extend(guarded(f"3{variant}", queue_down))
            print(f"case 3{variant} done in {time.monotonic() - started:.0f} s", flush=True)
        rows.sort(key=lambda row: row.case.split()[0])
        print(f"\n{table(rows)}\n")
        errors = logged_errors(tmp)
        print(
            "Tracebacks in the servers' and workers' logs:" + "".join(f"\n  {e}" for e in errors or ["none"])
        )
        print(
            f"{time.monotonic() - began:.0f} s in all on {os.cpu_count()} cores; "
            f"load average {os.getloadavg()[0]:.1f}"
        )
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt:
        # main's exit stack has stopped and removed everything by now.
        print("interrupted: the servers, workers, database, temporary files and Redis keys are gone")
        raise SystemExit(130) from None
