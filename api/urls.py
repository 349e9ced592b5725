"""The API under /api/v1/ and the page where a person manages their API tokens."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.urls import URLPattern, path

from api import views
from api.api import api
from api.routes import answers, campaigns, reads, runs, samples

for router in (campaigns.router, answers.router, samples.router, runs.router, reads.router):
    api.add_router("/", router)

app_name = "api"

_patterns, _app, _namespace = api.urls
# The API authenticates by token, not by session: the site's LoginRequiredMiddleware must let its
# requests through (the token check answers 401 itself). The docs page stays behind the login.
for _pattern in _patterns:
    if isinstance(_pattern, URLPattern) and _pattern.name != "openapi-view":
        login_not_required(_pattern.callback)

api_urls = (_patterns, _app, _namespace)

urlpatterns = [
    path("account/tokens/", views.tokens, name="tokens"),
    path("account/tokens/<int:token_id>/revoke/", views.revoke, name="revoke"),
]
