"""Uploads kept between an import's preview and its confirmation.

The preview stores the uploaded bytes (and the mapping file) in a directory of their own,
``VAR_DIR/import-previews/<key>/``, where ``key`` is random and never comes from the client. The
page gets a signed token naming the key, the user and the campaign, valid PREVIEW_MAX_AGE
seconds; confirming reads those very bytes, so what is imported is exactly what was previewed,
even if the file on the person's disk changed meanwhile, and nothing is uploaded twice. A
confirmation claims the directory by renaming it (atomic: of two clicks only one imports), and
the directory is deleted once imported or refused; any left behind (a preview never confirmed,
a process killed) is swept once older than PREVIEW_MAX_AGE.

Several web hosts must share ``VAR_DIR`` (or send a person to the same host) for a confirmation
to find its preview; otherwise it is refused as expired and the file is chosen again.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core import signing
from django.core.files.uploadedfile import UploadedFile
from django.utils.translation import gettext_lazy as _

# An hour to read a preview and confirm it.
PREVIEW_MAX_AGE = 3600
SALT = "evaluation.import-preview"
KEY = re.compile(r"[A-Za-z0-9_-]{32}")
CLAIMED = ".claimed-"
META = "meta.json"


class PreviewRefused(Exception):
    """A confirmation that does not name a live preview of this person and campaign."""

    field = "token"


@dataclass(frozen=True)
class StoredUpload:
    """A previewed upload on disk: its file (and mapping) under our own names, and what the
    person chose with it."""

    directory: Path
    token: str
    name: str
    data: Path
    mapping: Path | None
    mapping_name: str
    campaign: str
    update: bool
    # The format chosen with the file ("": detected from its shape).
    format: str = ""


def previews_dir() -> Path:
    return Path(settings.VAR_DIR) / "import-previews"


def _suffix(name: str) -> str:
    # The extension says the format; anything but a plain one is dropped (the import refuses it).
    suffix = Path(name).suffix.lower()
    return suffix if re.fullmatch(r"\.[a-z0-9]{1,10}", suffix) else ""


def _write(upload: UploadedFile, path: Path) -> None:
    with path.open("wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)


def store_upload(
    *,
    upload: UploadedFile,
    mapping: UploadedFile | None,
    user_id: int,
    campaign: str,
    update: bool,
    format: str = "",
) -> StoredUpload:
    """Keep ``upload`` (and ``mapping``) for a later confirmation by ``user_id`` into the
    campaign named ``campaign``; returns where, with the token that names it."""
    sweep_expired()
    key = secrets.token_urlsafe(24)
    directory = previews_dir() / key
    directory.mkdir(parents=True)
    name = upload.name or "upload"
    data = directory / f"data{_suffix(name)}"
    _write(upload, data)
    mapping_path = None
    if mapping is not None:
        mapping_path = directory / "mapping.json"
        _write(mapping, mapping_path)
    meta = {
        "user": user_id,
        "campaign": campaign,
        "update": update,
        "name": name,
        "data": data.name,
        "mapping": mapping_path.name if mapping_path else None,
        "mapping_name": (mapping.name or "mapping") if mapping is not None else "",
        "format": format,
    }
    (directory / META).write_text(json.dumps(meta), encoding="utf-8")
    token = signing.dumps({"key": key, "user": user_id, "campaign": campaign}, salt=SALT)
    return _stored(directory=directory, token=token, meta=meta)


def _stored(*, directory: Path, token: str, meta: dict) -> StoredUpload:
    return StoredUpload(
        directory=directory,
        token=token,
        name=meta["name"],
        data=directory / meta["data"],
        mapping=directory / meta["mapping"] if meta["mapping"] else None,
        mapping_name=meta["mapping_name"],
        campaign=meta["campaign"],
        update=bool(meta["update"]),
        format=str(meta.get("format") or ""),
    )


def open_upload(*, token: str, user_id: int, campaign: str | None) -> StoredUpload:
    """The upload the preview ``token`` names, if it is ``user_id``'s, for the campaign named
    ``campaign`` (None: whichever it names), not expired and not yet imported; else
    PreviewRefused. Changes nothing."""
    try:
        payload = signing.loads(token, salt=SALT, max_age=PREVIEW_MAX_AGE)
    except signing.SignatureExpired:
        raise PreviewRefused(_("this preview has expired: choose the file again")) from None
    except signing.BadSignature:
        raise PreviewRefused(_("this preview is not valid: choose the file again")) from None
    key = payload.get("key") if isinstance(payload, dict) else None
    if not isinstance(key, str) or not KEY.fullmatch(key):
        raise PreviewRefused(_("this preview is not valid: choose the file again"))
    if payload.get("user") != user_id or campaign not in (None, payload.get("campaign")):
        raise PreviewRefused(_("this preview was made by someone else or for another campaign"))
    directory = previews_dir() / key
    try:
        meta = json.loads((directory / META).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PreviewRefused(
            _("this preview was already imported or has expired: choose the file again")
        ) from None
    if meta.get("user") != user_id or meta.get("campaign") != payload.get("campaign"):
        raise PreviewRefused(_("this preview was made by someone else or for another campaign"))
    return _stored(directory=directory, token=token, meta=meta)


def claim(stored: StoredUpload) -> StoredUpload:
    """Take the upload for importing it: of two confirmations of one preview, only one gets it
    (the other gets PreviewRefused)."""
    claimed = stored.directory.with_name(f"{stored.directory.name}{CLAIMED}{secrets.token_hex(4)}")
    try:
        stored.directory.rename(claimed)
    except FileNotFoundError:
        raise PreviewRefused(
            _("this preview was already imported or has expired: choose the file again")
        ) from None
    # Touched, so that the sweep leaves an upload being imported alone for another full age.
    os.utime(claimed)
    return StoredUpload(
        directory=claimed,
        token=stored.token,
        name=stored.name,
        data=claimed / stored.data.name,
        mapping=claimed / stored.mapping.name if stored.mapping else None,
        mapping_name=stored.mapping_name,
        campaign=stored.campaign,
        update=stored.update,
        format=stored.format,
    )


def discard(stored: StoredUpload) -> None:
    """Delete the upload (imported, refused, or no longer wanted)."""
    shutil.rmtree(stored.directory, ignore_errors=True)


def sweep_expired(*, now: float | None = None) -> int:
    """Delete the uploads older than PREVIEW_MAX_AGE (never confirmed, or left by a killed
    process); returns how many."""
    root = previews_dir()
    if not root.is_dir():
        return 0
    limit = (time.time() if now is None else now) - PREVIEW_MAX_AGE
    swept = 0
    for directory in root.iterdir():
        try:
            if directory.stat().st_mtime < limit:
                shutil.rmtree(directory, ignore_errors=True)
                swept += 1
        except FileNotFoundError:
            continue
    return swept
