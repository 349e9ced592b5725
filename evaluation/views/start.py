"""The start page a person lands on after logging in."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.access import AppRequest
from evaluation.pages.start import start_for


@login_required
@require_GET
def start(request: AppRequest) -> HttpResponse:
    # Staff create campaigns (the rule of evaluation:import_new, which refuses anyone else).
    may_create = request.user.is_staff or request.user.is_superuser
    return render(
        request, "evaluation/start.html", {"start": start_for(user=request.user), "may_create": may_create}
    )
