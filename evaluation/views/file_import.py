"""The upload page: import a campaign file through the browser (small files, synchronously)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.files.uploadedfile import UploadedFile
from django.http import FileResponse, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_http_methods

from annotation import ingest, limits
from annotation.access import (
    AppRequest,
    campaigns_managed_by,
    get_campaign_for,
    may_create_campaigns,
    roles_of,
)
from annotation.models import Campaign, Role
from evaluation.forms.imports import ConfirmImportForm, ImportForm
from evaluation.imports.campaign_file import (
    ImportPreview,
    ImportSummary,
    import_file,
    import_previewed,
    preview_upload,
)
from evaluation.imports.previews import PreviewRefused

MANAGERS = [Role.MANAGER]
# A few records of the demo campaign: a file the import accepts as it is (a test imports it).
EXAMPLE = Path(__file__).resolve().parent.parent / "data" / "import-example.jsonl"


def _save(upload: UploadedFile, directory: str, stem: str) -> Path:
    # Keep the extension: it says the format. The stored name is ours, never the client's.
    path = Path(directory) / f"{stem}{Path(upload.name or '').suffix.lower()}"
    with path.open("wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    return path


def _readable_path(upload: UploadedFile, directory: str, stem: str) -> Path:
    # An import reads its file twice (check, then write), so it needs a path. Django already
    # keeps an upload over FILE_UPLOAD_MAX_MEMORY_SIZE in a temporary file: read that one rather
    # than copy it; a smaller upload, held in memory, is written out. The format comes from the
    # upload's name, passed separately.
    temporary = getattr(upload, "temporary_file_path", None)
    if temporary is not None:
        return Path(temporary())
    return _save(upload, directory, stem)


def _run_import(
    *, request: AppRequest, form: ImportForm, create: bool
) -> tuple[ImportSummary | None, list[ingest.RowError], int]:
    data = form.cleaned_data
    upload, mapping_upload = data["file"], data["mapping"]
    with tempfile.TemporaryDirectory(prefix="import-") as directory:
        try:
            mapping = None
            if mapping_upload is not None:
                mapping = ingest.read_mapping(
                    path=_save(mapping_upload, directory, "mapping"), name=mapping_upload.name
                )
            summary = import_file(
                path=_readable_path(upload, directory, "data"),
                name=upload.name,
                campaign_name=data["campaign"],
                mapping=mapping,
                update=data["update"],
                manager=request.user if create else None,
                format=data["format"],
            )
        except ingest.ImportFailed as exc:
            return None, exc.errors, exc.more
    return summary, [], 0


def _preview(
    *, request: AppRequest, form: ImportForm
) -> tuple[ImportPreview | None, list[ingest.RowError], int]:
    data = form.cleaned_data
    try:
        preview = preview_upload(
            upload=data["file"],
            mapping=data["mapping"],
            user_id=request.user.pk,
            campaign_name=data["campaign"],
            update=data["update"],
            format=data["format"],
        )
    except ingest.ImportFailed as exc:
        return None, exc.errors, exc.more
    return preview, [], 0


def _confirm(
    *, request: AppRequest, form: ConfirmImportForm, create: bool
) -> tuple[ImportSummary | None, list[ingest.RowError], int]:
    stored = form.cleaned_data["token"]
    try:
        summary = import_previewed(stored=stored, manager=request.user if create else None)
    except ingest.ImportFailed as exc:
        return None, exc.errors, exc.more
    except PreviewRefused as exc:
        return None, [ingest.RowError(file=stored.name, row=None, field=exc.field, message=str(exc))], 0
    return summary, [], 0


def _page(request: AppRequest, *, campaign: Campaign | None) -> HttpResponse:
    """The import page. Its form asks for a preview (``preview``): the file is checked and kept,
    nothing is written, and the preview's confirmation (``token``) imports that very file. A
    POST of a file without ``preview`` imports it at once (scripts, and the page before it
    previewed)."""
    summary: ImportSummary | None = None
    preview: ImportPreview | None = None
    errors: list[ingest.RowError] = []
    more = 0

    def may_manage(existing: Campaign) -> bool:
        return Role.MANAGER in roles_of(user=request.user, campaign=existing)

    posted = request.method == "POST"
    form = ImportForm(
        request.POST if posted and "token" not in request.POST else None,
        request.FILES if posted and "token" not in request.POST else None,
        campaign=campaign,
        may_manage=may_manage,
    )
    if posted and "token" in request.POST:
        confirm = ConfirmImportForm(
            request.POST, campaign=campaign, may_manage=may_manage, user_id=request.user.pk
        )
        if confirm.is_valid():
            summary, errors, more = _confirm(request=request, form=confirm, create=campaign is None)
        else:
            errors = confirm.row_errors()
    elif posted:
        if not form.is_valid():
            errors = form.row_errors()
        elif form.cleaned_data["preview"]:
            preview, errors, more = _preview(request=request, form=form)
        else:
            summary, errors, more = _run_import(request=request, form=form, create=campaign is None)
    context = {
        "campaign": campaign,
        "name": summary.campaign.name if summary and campaign is None else form.entered_name(),
        "summary": summary,
        "preview": preview,
        "errors": errors,
        "more": more,
        "update": bool(form["update"].value()),
        "format_field": form["format"],
        "max_bytes": settings.IMPORT_MAX_BYTES,
        "formats": ", ".join(ingest.FORMATS),
    }
    template = "evaluation/import.html#result" if request.htmx else "evaluation/import.html"
    return render(request, template, context, status=400 if errors else 200)


@login_required
@require_http_methods(["GET", "POST"])
def import_new(request: AppRequest) -> HttpResponse:
    """Import into a new campaign (or one the user manages), named in the form. Anyone else is
    told that only staff create campaigns (403), with a link to the import of each campaign
    they manage."""
    if not may_create_campaigns(user=request.user):
        managed = list(campaigns_managed_by(user=request.user))
        return render(request, "evaluation/import_refused.html", {"managed": managed}, status=403)
    return _page(request, campaign=None)


@login_required
@require_http_methods(["GET", "POST"])
def import_into(request: AppRequest, slug: str) -> HttpResponse:
    """Import more answers (or, with update, replacements) into a campaign the user manages."""
    campaign, _ = get_campaign_for(user=request.user, slug=slug, roles=MANAGERS)
    return _page(request, campaign=campaign)


@login_required
@require_GET
def import_format(request: AppRequest) -> HttpResponse:
    """The import format for the people who prepare the files, in their language: every field
    the importer reads, its limits (``annotation.limits``), examples and the usual refusals. The
    developers' reference is docs/import-format.md."""
    context = {"limits": limits, "max_bytes": settings.IMPORT_MAX_BYTES}
    return render(request, "evaluation/import_format.html", context)


@login_required
@require_GET
def import_example(request: AppRequest) -> FileResponse:
    """A small valid JSONL file to start from, downloaded."""
    return FileResponse(
        EXAMPLE.open("rb"),
        as_attachment=True,
        filename="attest-example.jsonl",
        content_type="application/jsonl; charset=utf-8",
    )
