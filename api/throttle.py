"""The API's rate per token: at most API_RATE_PER_TOKEN requests in any window of its length,
counted in Django's cache so that every process counts the same requests (CACHE_URL on Redis).

A window's count is one cache key that every request increments (``incr``: one atomic command
on Redis, a lock in the local-memory cache), so requests that arrive together are all counted;
ninja's own throttle read a list of times, added one and wrote it back, and eight requests at
once let 216-278 of 300 through a limit of 120 a minute (bench/fault_bench.py). The window
slides: the count of the window before, weighted by the share of it still inside the last
duration, is added (the estimate Cloudflare and nginx's limit_req describe), so that a burst at
a window's edge cannot take twice the rate. A refused request is taken back out of the count.

When the cache does not answer (Redis down), requests go through and the failure is logged:
the rate protects the app from a runaway client, and reads of the database must not stop with
the cache; the API's run and sample requests then answer 503 on the broker (``QueueDown``).
"""

from __future__ import annotations

import logging
import math
import threading
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest
from ninja.throttling import BaseThrottle, SimpleRateThrottle

from api.models import ApiToken

logger = logging.getLogger(__name__)


class TokenThrottle(BaseThrottle):
    """At most API_RATE_PER_TOKEN requests per token (the rate read at each request, so a changed
    setting applies at once). One instance serves every thread: the wait of a refusal is kept per
    thread, nothing else is kept between requests."""

    timer = staticmethod(time.time)

    def __init__(self) -> None:
        self._local = threading.local()

    def allow_request(self, request: HttpRequest) -> bool:
        self._local.wait = None
        token = getattr(request, "auth", None)
        if not isinstance(token, ApiToken):
            return True
        limit, duration = SimpleRateThrottle.parse_rate(SimpleRateThrottle, settings.API_RATE_PER_TOKEN)  # type: ignore[arg-type]
        if limit is None or duration is None:
            return True
        now = self.timer()
        window = math.floor(now / duration)
        key = f"rate:{token.digest}:{window}"
        try:
            cache.add(key, 0, timeout=2 * duration)
            count = cache.incr(key)
            before = cache.get(f"rate:{token.digest}:{window - 1}", 0)
            inside = 1 - (now - window * duration) / duration
            if count + before * inside <= limit:
                return True
            cache.decr(key)
        except Exception:  # the cache's own errors differ by backend (redis, memcached...)
            logger.warning("the API's rate is not counted: the cache does not answer", exc_info=True)
            return True
        # When the window before has weighed out enough for one more request (at the latest when
        # this window ends and becomes the one before).
        left = (window + 1) * duration - now
        excess = count + before * inside - limit
        if before > 0 and count <= limit:
            left = min(left, excess / before * duration)
        self._local.wait = max(1.0, left)
        return False

    def wait(self) -> float | None:
        return getattr(self._local, "wait", None)
