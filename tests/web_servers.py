"""The production web servers started for real, for the slow-clients test and bench: gunicorn
(its default sync worker, or config/gunicorn.py) on a SQLite database of its own, nginx with
deploy/nginx-attest.conf in front of it, and a client that sends its request a byte at a time."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, *, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def slow_client(port: int, stop: threading.Event) -> None:
    """A request for the login page whose headers never end: a byte every 0.5 s until ``stop``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
            s.sendall(b"GET /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            for byte in b"X-Slow: " + b"a" * 500:
                if stop.is_set():
                    return
                s.sendall(bytes([byte]))
                time.sleep(0.5)
    except OSError:
        return


def app_environment(directory: Path) -> dict[str, str]:
    """The environment of an app on a SQLite database of its own in ``directory``, migrated."""
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{directory}/app.sqlite3",
        "DEBUG": "0",
        "SECRET_KEY": "web-servers-" + "x" * 40,
        "ALLOWED_HOSTS": "127.0.0.1",
        "VAR_DIR": str(directory / "var"),
        "TRUSTED_PROXY_COUNT": "1",
    }
    env.pop("CELERY_BROKER_URL", None)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    return env


@contextmanager
def gunicorn(
    *, env: dict[str, str], production: bool, workers: int, threads: int, log: Path
) -> Iterator[int]:
    """gunicorn on a free port (config/gunicorn.py when ``production``, else its defaults); the port."""
    port = free_port()
    args = [str(ROOT / ".venv" / "bin" / "gunicorn"), "config.wsgi"]
    if production:
        args[1:1] = ["-c", "config/gunicorn.py"]
    else:
        args += ["--bind", f"127.0.0.1:{port}", "--workers", str(workers)]
    env = {**env, "WEB_BIND": f"127.0.0.1:{port}", "WEB_WORKERS": str(workers), "WEB_THREADS": str(threads)}
    with log.open("w") as output:
        process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT)
        try:
            wait_for(f"http://127.0.0.1:{port}/login/")
            yield port
        finally:
            process.terminate()
            process.wait(timeout=30)


@contextmanager
def nginx(*, directory: Path, app_port: int) -> Iterator[int]:
    """nginx with deploy/nginx-attest.conf in front of ``app_port``, its logs in ``directory``
    (``access.log``); its port."""
    port = free_port()
    site = (ROOT / "deploy" / "nginx-attest.conf").read_text(encoding="utf-8")
    site = site.replace("listen 80;", f"listen 127.0.0.1:{port};")
    site = site.replace("server 127.0.0.1:8000;", f"server 127.0.0.1:{app_port};")
    site = site.replace("/var/log/nginx/attest.log", str(directory / "access.log"))
    (directory / "attest.conf").write_text(site, encoding="utf-8")
    temp = directory / "nginx-temp"
    temp.mkdir(exist_ok=True)
    (directory / "nginx.conf").write_text(
        f"""
        worker_processes 1;
        pid {directory}/nginx.pid;
        error_log {directory}/error.log;
        events {{ worker_connections 2048; }}
        http {{
            client_body_temp_path {temp}/body; proxy_temp_path {temp}/proxy;
            fastcgi_temp_path {temp}/fastcgi; uwsgi_temp_path {temp}/uwsgi; scgi_temp_path {temp}/scgi;
            include {directory}/attest.conf;
        }}
        """,
        encoding="utf-8",
    )
    process = subprocess.Popen(
        [NGINX, "-p", str(directory), "-c", str(directory / "nginx.conf"), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(f"http://127.0.0.1:{port}/login/")
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)
