"""Small strict readers of environment variables: a bad value fails loudly at start-up."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    """The variable's value, or ``default`` when it is unset."""
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    """A boolean: 1/true/yes/on or 0/false/no/off (any case); anything else is an error."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    """An integer, at least ``minimum`` when given."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    """A float, at least ``minimum`` when given."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    """A comma-separated list, blanks dropped."""
    raw = os.environ.get(name)
    if raw is None:
        return list(default or [])
    return [item.strip() for item in raw.split(",") if item.strip()]


# Values copied from an example rather than made for the deployment.
_PLACEHOLDER_KEYS = {"change-me", "changeme", "secret", "django-insecure"}
SECRET_KEY_MIN_LENGTH = 50


def env_secret_key(name: str) -> str:
    """A secret key set in the environment, or "" when unset or empty. A placeholder (such as
    the ``change-me`` of .env.example) or a key shorter than 50 characters is an error: signed
    sessions and tokens would be forgeable."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return ""
    if raw.lower() in _PLACEHOLDER_KEYS or raw.lower().startswith("django-insecure"):
        raise ImproperlyConfigured(
            f"{name} is a placeholder: set a random value of at least {SECRET_KEY_MIN_LENGTH} "
            "characters (python -c 'import secrets; print(secrets.token_urlsafe(50))'), "
            "or unset it to use var/secret_key"
        )
    if len(raw) < SECRET_KEY_MIN_LENGTH:
        raise ImproperlyConfigured(
            f"{name} is {len(raw)} characters long: it needs at least {SECRET_KEY_MIN_LENGTH} "
            "(python -c 'import secrets; print(secrets.token_urlsafe(50))')"
        )
    return raw


def local_secret_key(path: Path) -> str:
    """A random secret key kept in ``path`` (created on first use, readable by its owner only),
    so that the embedded default needs no configuration yet never runs on a published key.
    Safe when the web server and a worker start at once: the file is created exclusively."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        # Another process may have created the file an instant ago and be writing it.
        for _ in range(50):
            key = path.read_text().strip()
            if key:
                break
            time.sleep(0.1)
        if len(key) < 32:
            raise ImproperlyConfigured(
                f"{path} holds no usable secret key: delete it or set SECRET_KEY"
            ) from None
        return key
    key = secrets.token_urlsafe(50)
    with os.fdopen(fd, "w") as stream:
        stream.write(key)
    return key
