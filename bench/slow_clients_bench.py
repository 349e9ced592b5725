"""Slow clients against the web server, three ways on the same machine in one run: gunicorn's
default sync worker, the production settings alone (config/gunicorn.py: the threaded worker),
and those behind nginx with deploy/nginx-attest.conf.

    python bench/slow_clients_bench.py [--workers 2] [--threads 8] [--slow 6,24,200] [--seconds 8]

For each server and each number of slow clients: that many anonymous connections send a
request's headers a byte every 0.5 s (they never finish within the run); meanwhile one ordinary
client asks for the login page every 0.2 s (5 s timeout). Prints how many of its requests were
answered, and their median and worst latency. A SQLite database in a temporary directory, DEBUG
off; the servers started as tests/web_servers.py starts them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.web_servers import NGINX, app_environment, gunicorn, nginx, slow_client


def measure(*, port: int, slow: int, seconds: float) -> tuple[int, list[float]]:
    stop = threading.Event()
    threads = [threading.Thread(target=slow_client, args=(port, stop), daemon=True) for _ in range(slow)]
    for thread in threads:
        thread.start()
    time.sleep(1.5)  # the slow connections are in
    asked, latencies = 0, []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        asked += 1
        started = time.monotonic()
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=5).read()
            latencies.append(time.monotonic() - started)
        except OSError:
            pass
        time.sleep(0.2)
    stop.set()
    return asked, latencies


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--slow", default="6,24,200")
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    servers = [("sync (gunicorn's default)", False, False), ("gthread (config/gunicorn.py)", True, False)]
    if Path(NGINX).exists():
        servers.append(("nginx + gthread", True, True))
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        env = app_environment(directory)
        print(
            f"{args.workers} gunicorn processes ({args.threads} threads each for gthread); an ordinary "
            f"client every 0.2 s for {args.seconds:g} s beside the slow ones"
        )
        print(f"{'server':<30} {'slow':>5} {'answered':>9} {'median':>8} {'worst':>8}")
        for label, production, proxied in servers:
            for slow in [int(n) for n in args.slow.split(",")]:
                with ExitStack() as stack:
                    port = stack.enter_context(
                        gunicorn(
                            env=env,
                            production=production,
                            workers=args.workers,
                            threads=args.threads,
                            log=directory / "gunicorn.log",
                        )
                    )
                    if proxied:
                        port = stack.enter_context(nginx(directory=directory, app_port=port))
                    asked, latencies = measure(port=port, slow=slow, seconds=args.seconds)
                median = f"{statistics.median(latencies) * 1000:.0f} ms" if latencies else "-"
                worst = f"{max(latencies) * 1000:.0f} ms" if latencies else "-"
                print(f"{label:<30} {slow:>5} {len(latencies):>4}/{asked:<4} {median:>8} {worst:>8}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
