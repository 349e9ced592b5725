"""Logging filters named in settings.LOGGING."""

from __future__ import annotations

import logging
import re

# An API token anywhere in a line (``api.tokens``: "attest_" and 43 URL-safe characters).
TOKEN = re.compile(r"attest_[A-Za-z0-9_-]{20,}")
HIDDEN = "attest_[hidden]"


def without_tokens(text: str) -> str:
    """``text`` with every API token in it hidden."""
    return TOKEN.sub(HIDDEN, text)


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


class TokensHidden(logging.Filter):
    """No API token reaches a log: one sent where it does not belong (a URL's query string, which
    the API refuses) would otherwise be written by the server's request line, an error page's
    record or a traceback. Attached to every handler, so it holds for every logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "attest_" in message:
            record.msg, record.args = without_tokens(message), ()
        if record.exc_info and record.exc_text is None:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text and "attest_" in record.exc_text:
            record.exc_text = without_tokens(record.exc_text)
        return True
