"""The client's address, for the login throttle (django-axes' AXES_CLIENT_IP_CALLABLE)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str | None:
    """REMOTE_ADDR when no proxy is trusted (TRUSTED_PROXY_COUNT=0, the default: a client could
    write any X-Forwarded-For). Behind n trusted proxies, each appending the address it saw to
    CLIENT_IP_HEADER, the n-th address from the right: the one the outermost proxy saw, which
    no client can forge. A header with fewer addresses than proxies falls back to REMOTE_ADDR."""
    remote = request.META.get("REMOTE_ADDR") or None
    count = settings.TRUSTED_PROXY_COUNT
    if count == 0:
        return remote
    hops = [part.strip() for part in request.META.get(settings.CLIENT_IP_HEADER, "").split(",")]
    hops = [hop for hop in hops if hop]
    if len(hops) < count:
        return remote
    return hops[-count]
