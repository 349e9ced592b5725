"""The production configuration in front of slow clients, for real: nginx with
deploy/nginx-attest.conf before gunicorn with config/gunicorn.py (one process, four threads: a
small server). Two hundred anonymous connections send their headers a byte at a time; an
ordinary client is still answered, every time (without nginx, 24 of them leave it no thread:
bench/slow_clients_bench.py). And a token sent in a URL is written in neither server's log."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.web_servers import NGINX, app_environment, gunicorn, nginx, slow_client

SLOW_CLIENTS = 200

pytestmark = [
    pytest.mark.worker,
    pytest.mark.postgres,  # production's servers: SQLite, the set-up of `make run`, adds nothing
    pytest.mark.skipif(not Path(NGINX).exists(), reason="needs nginx (make install installs it)"),
]


def test_two_hundred_slow_clients_leave_the_app_answering_and_no_token_is_logged(tmp_path):
    env = app_environment(tmp_path)
    app_log = tmp_path / "gunicorn.log"
    with (
        gunicorn(env=env, production=True, workers=1, threads=4, log=app_log) as app_port,
        nginx(directory=tmp_path, app_port=app_port) as port,
    ):
        stop = threading.Event()
        slow = [
            threading.Thread(target=slow_client, args=(port, stop), daemon=True) for _ in range(SLOW_CLIENTS)
        ]
        for thread in slow:
            thread.start()
        try:
            time.sleep(2.0)  # every slow connection is in, sending
            answered = 0
            for _ in range(10):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=10) as response:
                    answered += response.status == 200 and b"<form" in response.read()
            assert answered == 10
        finally:
            stop.set()
        # A token in a URL: refused by the API, and in no log line.
        token = "attest_" + "T" * 43
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/campaigns?token={token}", timeout=10)
        assert refused.value.code == 401
        time.sleep(0.5)  # the access logs are written
    access = (tmp_path / "access.log").read_text(encoding="utf-8")
    assert '"GET /api/v1/campaigns HTTP/1.1" 401' in access
    logged = app_log.read_text(encoding="utf-8")
    assert "/api/v1/campaigns" in logged
    assert token not in access and "T" * 43 not in logged
