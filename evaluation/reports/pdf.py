"""A report read (``read.ShownReport``) as a PDF in the reader's language: the answer, how sure it
is, the methods paragraph written from the report's own parameters, how it was computed, the
judge's calibration and the automatic metrics (``evaluation/report_pdf.html``), drawn by
WeasyPrint.

WeasyPrint fetches nothing from the network: its fetcher serves our own static files (the
stylesheet) and refuses every other address, so a report renders the same offline and no text of
a report (theme names, judge names) can make the server fetch anything.
"""

from __future__ import annotations

import mimetypes
from typing import Any, BinaryIO
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.utils import timezone
from weasyprint import HTML, URLFetcher
from weasyprint.urls import URLFetcherResponse, URLFetchingError

from annotation.models import Sample
from evaluation.estimates import planning
from evaluation.estimates.categorical import CategoricalReport, theme_tables
from evaluation.reports.read import ShownReport
from evaluation.reports.summary import VersionChange
from inference.estimators import ppi

# The address the PDF's HTML is read from: not a server, only a base for its static files.
BASE_URL = "https://attest.invalid/"


class StaticFilesOnly(URLFetcher):
    """WeasyPrint's fetcher for our PDFs: ``STATIC_URL`` paths under ``BASE_URL`` read from the
    static files (``django.contrib.staticfiles``' finders, as WhiteNoise serves them); anything else,
    another host, a ``file:`` or ``data:`` address, is refused without a request. ``fetched``
    lists what was served."""

    def __init__(self) -> None:
        super().__init__(allowed_protocols=())
        self.fetched: list[str] = []

    def fetch(self, url: str, headers: Any = None) -> URLFetcherResponse:
        parts = urlsplit(url)
        prefix = urlsplit(BASE_URL + settings.STATIC_URL.lstrip("/"))
        if (parts.scheme, parts.netloc) != (prefix.scheme, prefix.netloc) or not parts.path.startswith(
            prefix.path
        ):
            raise URLFetchingError(f"not one of our static files: {url}")
        name = unquote(parts.path[len(prefix.path) :])
        found = finders.find(name) if ".." not in name.split("/") else None
        if not found:
            raise URLFetchingError(f"no such static file: {name}")
        path = found if isinstance(found, str) else found[0]
        with open(path, "rb") as handle:
            body = handle.read()
        self.fetched.append(url)
        content_type = mimetypes.guess_type(path)[0] or "application/octet-stream"
        return URLFetcherResponse(url, body, {"Content-Type": content_type})


def html_to_pdf(*, html: str, sink: BinaryIO) -> StaticFilesOnly:
    """``html`` (relative addresses read against ``BASE_URL``) as a PDF into ``sink``, with the
    static-files-only fetcher, which it returns (what was fetched)."""
    fetcher = StaticFilesOnly()
    HTML(string=html, base_url=BASE_URL, url_fetcher=fetcher).write_pdf(sink)
    return fetcher


def pdf_context(
    *,
    shown: ShownReport,
    target: float,
    version_change: VersionChange | None = None,
    calibration: dict[str, Any] | None = None,
    metrics: Any = None,
) -> dict[str, Any]:
    """What ``evaluation/report_pdf.html`` reads: the report page's figures (the same report,
    the planner at ``target``), the change against the previous version, the calibration section
    and the automatic metrics when given, and what the methods paragraph says of the sample."""
    request = shown.request
    criterion = request.criterion
    report = shown.report
    context: dict[str, Any] = {
        "campaign": criterion.campaign,
        "criterion": criterion,
        "report": report,
        "shown": shown,
        "params": request,
        "target": target,
        "method_notes": ppi.METHODS,
        "generated_at": timezone.now(),
        "version_change": version_change,
        "metrics": metrics,
        "small_themes": shown.small_themes,
        "citation_rows": shown.citation_rows,
        "sample": Sample.objects.filter(pk=report.sample_id).first() if report.sample_id else None,
        **(calibration or {}),
    }
    if isinstance(report, CategoricalReport):
        context.update(categorical=report, tables=theme_tables(report=report))
        return context
    context["plans"] = [
        planning.plan_theme(group=group, target_halfwidth=target, alpha=request.alpha)
        for group in report.themes
    ]
    return context


def write_pdf(*, sink: BinaryIO, **context: Any) -> StaticFilesOnly:
    """The report as a PDF into ``sink`` (``pdf_context``'s keywords), in the active language."""
    html = render_to_string("evaluation/report_pdf.html", pdf_context(**context))
    return html_to_pdf(html=html, sink=sink)
