"""The import tests' sample files and what they need to read them and count what was written."""

from __future__ import annotations

import json
from pathlib import Path

from django.apps import apps
from django.contrib.auth import get_user_model

DATA = Path(__file__).parent / "data"
JSONL = DATA / "answers.jsonl"
RECORDS = [json.loads(line) for line in JSONL.read_text(encoding="utf-8").splitlines()]


def table_counts() -> dict[str, int]:
    """Rows in every table the import could touch."""
    models = [
        *apps.get_app_config("annotation").get_models(),
        *apps.get_app_config("evaluation").get_models(),
        get_user_model(),
    ]
    return {model._meta.label: model.objects.count() for model in models}


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def bad_content() -> bytes:
    """The sample file with one row whose answer is empty: refused, naming row 3."""
    records = [dict(r) for r in RECORDS]
    records[2]["answer"] = ""
    return "".join(json.dumps(r) + "\n" for r in records).encode()
