"""gunicorn's settings for Attest in production: ``gunicorn -c config/gunicorn.py config.wsgi``.

- **Slow clients cannot starve it.** gunicorn's default sync worker gives a whole process to a
  connection until its request has arrived: six anonymous connections sending their headers a
  byte at a time left no process for anyone else. The threaded worker (``gthread``) keeps every
  connection in one poller and hands it to a thread only once its request's data has come (a
  connection silent for 5 s in a thread goes back to the poller). bench/slow_clients_bench.py
  measures both.
- **No token in a log.** The access log writes the path without its query string (a token sent
  in a URL, which the API refuses, is not written down) and no referrer.

Every value can be set from the environment: WEB_BIND, WEB_WORKERS, WEB_THREADS, WEB_TIMEOUT.
"""

from __future__ import annotations

import multiprocessing
import os

bind = os.environ.get("WEB_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_WORKERS", 2 * multiprocessing.cpu_count() + 1))
worker_class = "gthread"
threads = int(os.environ.get("WEB_THREADS", 8))
# Seconds a request may take (a report's recomputation is a background job, not a request).
timeout = int(os.environ.get("WEB_TIMEOUT", 60))
graceful_timeout = 30
keepalive = 5
# Headers: as many and as long as a browser sends, no more.
limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190

accesslog = "-"
# %(U)s is the path without its query string.
access_log_format = '%(h)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(M)sms'
