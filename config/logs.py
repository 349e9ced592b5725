"""Logging filters named in settings.LOGGING."""

from __future__ import annotations

import logging


class RefusalsWithoutTraceback(logging.Filter):
    """A refused request (a 4xx: PermissionDenied, Http404, a bad request) is part of normal use:
    Django logs it with the exception that produced it, which the console would print as a
    traceback. Keep the one line; 5xx records keep their traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and 400 <= status < 500:
            record.exc_info = None
            record.exc_text = None
        return True
