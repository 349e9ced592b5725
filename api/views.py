"""The page where a person makes, lists and revokes their API tokens."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from annotation.access import AppRequest
from annotation.errors import FieldError
from annotation.forms import add_domain_error
from api.forms import TokenForm
from api.tokens import create_token, revoke_token, tokens_of


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: AppRequest) -> HttpResponse:
    """The person's tokens; a POST makes one and shows it, this once."""
    form = TokenForm(request.POST or None)
    secret = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                secret = create_token(
                    user=request.user, name=form.cleaned_data["name"], days=form.cleaned_data["days"]
                ).secret
                form = TokenForm()
                status = 201
            except FieldError as exc:
                add_domain_error(form, exc)
        if secret is None:
            status = 400
    context = {"form": form, "secret": secret, "tokens": tokens_of(user=request.user)}
    return render(request, "api/tokens.html", context, status=status)


@login_required
@require_POST
def revoke(request: AppRequest, token_id: int) -> HttpResponse:
    """Revoke one of the person's tokens; anyone else's, or an unknown one, is 404."""
    if not revoke_token(user=request.user, token_id=token_id):
        raise Http404("No such token.")
    messages.success(request, gettext("Token revoked."))
    return redirect("api:tokens")
