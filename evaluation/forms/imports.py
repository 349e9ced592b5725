"""The input of a campaign import: the file and its options, then the confirmation of its
preview."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from annotation import ingest
from annotation.ingest import formats
from annotation.models import Campaign
from evaluation.imports import previews


def _campaign_name(name: str, *, may_manage: Callable[[Campaign], bool]) -> str:
    """A campaign name typed on the new-campaign page: not empty, and new or managed."""
    name = name.strip()
    if not name:
        raise ValidationError(_("give a campaign name"))
    existing = Campaign.objects.filter(name=name).first()
    if existing is not None and not may_manage(existing):
        # A form error, not 403: the name is taken (names are unique), whoever holds it.
        raise ValidationError(_("this name is taken by a campaign you do not manage: choose another name"))
    return name


# The formats the page offers (annotation.ingest.formats), detection first.
FORMAT_CHOICES = [
    (formats.AUTO, _("Detected from the file")),
    (formats.ATTEST, _("Attest (this page's format)")),
    (formats.HAGRID, "HAGRID"),
    (formats.ALCE, _("ALCE (results or human evaluation)")),
    (formats.RAGTRUTH, _("RAGTruth (responses and sources in one JSONL file)")),
]


class ImportForm(forms.Form):
    """An import through the browser: the campaign's name (for a new campaign; an existing one
    is named by the page), the file, its format (detected by default), an optional column
    mapping and whether to replace answers.

    ``user`` may import into an existing campaign by name only when managing it."""

    campaign = forms.CharField(required=False)
    file = forms.FileField(allow_empty_file=True, error_messages={"required": _("choose a file")})
    format = forms.ChoiceField(choices=FORMAT_CHOICES, required=False)
    mapping = forms.FileField(required=False, allow_empty_file=True)
    update = forms.BooleanField(required=False)
    # The page's form asks for a preview first; a POST without it imports at once.
    preview = forms.BooleanField(required=False)

    def __init__(self, data: Any = None, files: Any = None, *, campaign: Campaign | None, may_manage) -> None:
        super().__init__(data, files)
        self.target = campaign
        self.may_manage = may_manage

    def clean_campaign(self) -> str:
        if self.target is not None:
            return self.target.name
        return _campaign_name(self.cleaned_data["campaign"], may_manage=self.may_manage)

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > settings.IMPORT_MAX_BYTES:
            # A body declaring more is refused before it is read (config/middleware.py); this
            # catches a file sent without a Content-Length.
            raise ValidationError(
                _("%(size)s bytes is more than the limit of %(limit)s bytes (IMPORT_MAX_BYTES)"),
                params={"size": upload.size, "limit": settings.IMPORT_MAX_BYTES},
            )
        return upload

    def row_errors(self) -> list[ingest.RowError]:
        """The form's errors as the import's own errors (file, row, field, message)."""
        upload = self.files.get("file")
        name = (upload.name if upload is not None else None) or "upload"
        return [
            ingest.RowError(file=name, row=None, field=field, message=str(message))
            for field, messages in self.errors.items()
            for message in messages
        ]

    def entered_name(self) -> str:
        """The campaign name as typed, to fill the form in again."""
        if self.target is not None:
            return self.target.name
        return (self.data.get("campaign") or "").strip()


class ConfirmImportForm(forms.Form):
    """The confirmation of a previewed import: the preview's token, which must be this user's,
    for this page's campaign (``campaign``; None on the new-campaign page, where the token's
    campaign name is checked again as typed), not expired and not yet imported."""

    token = forms.CharField(max_length=1000)

    def __init__(self, data: Any = None, *, campaign: Campaign | None, may_manage, user_id: int) -> None:
        super().__init__(data)
        self.target = campaign
        self.may_manage = may_manage
        self.user_id = user_id

    def clean_token(self) -> previews.StoredUpload:
        token = self.cleaned_data["token"]
        # On the new-campaign page the token's own campaign name stands, checked again below.
        name = self.target.name if self.target is not None else None
        try:
            stored = previews.open_upload(token=token, user_id=self.user_id, campaign=name)
        except previews.PreviewRefused as exc:
            raise ValidationError(str(exc)) from None
        if self.target is None:
            _campaign_name(stored.campaign, may_manage=self.may_manage)
        return stored

    def row_errors(self) -> list[ingest.RowError]:
        """The form's errors as the import's own errors (file, row, field, message)."""
        return [
            ingest.RowError(file="upload", row=None, field=field, message=str(message))
            for field, messages in self.errors.items()
            for message in messages
        ]
