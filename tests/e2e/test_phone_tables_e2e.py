"""The pages whose tables are wider than a phone, on the demo campaign in Chromium with DEBUG off,
at 390 px in English and French: each shows the first row's key figure inside the window, and
no table scrolls sideways inside its frame (a table too wide stacks one row per block, its key
figure first)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.models import Sample
from evaluation.demo.campaign import DEMO_SUPERUSER, load_demo
from evaluation.models import JudgeRun
from tests.e2e.conftest import needs_chromium, settle, shoot
from tests.e2e.test_pages_e2e import STICKING_OUT, open_context, overflow

pytestmark = [pytest.mark.e2e, needs_chromium]

WIDTH = 390
# The frames of the tables stacked on a phone.
SCROLLING = """[...document.querySelectorAll('.table-scroll:has(> table.stack-on-phone)')]
  .map((e) => e.scrollWidth - e.clientWidth)"""


def phone_pages(campaign, run, sample) -> list[tuple[str, str, list[str]]]:
    """(name, path, the key figure of each table's first row) for every page checked."""
    slug = campaign.slug
    return [
        ("runs", reverse("evaluation:run_list", args=[slug]), ["table.run-list tbody td.lead"]),
        ("run", reverse("evaluation:run_detail", args=[slug, run.pk]), ["#run-status"]),
        (
            "judges",
            reverse("evaluation:judge_alignment", args=[slug, "veracity"]),
            [
                "table.alignment-summary tbody td.lead",
                "table.drift-table tbody td.lead",
                "table.theme-alignment tbody td.lead",
            ],
        ),
        (
            "plan",
            reverse("evaluation:judge_plan", args=[slug, "veracity"]),
            ["table.plan-table tbody td.lead"],
        ),
        ("confidence", reverse("evaluation:confidence_sample", args=[slug]), ["#split tbody td.lead"]),
        (
            "reference",
            reverse("evaluation:reference_answers", args=[slug]),
            ["table.reference-table tbody td.lead"],
        ),
        (
            "citations",
            reverse("evaluation:report", args=[slug, "citation_support"]),
            ["table.citation-table tbody td.lead", "table.alce-table tbody td.lead"],
        ),
        ("evidence", reverse("evaluation:evidence", args=[slug]), ["table.evidence-table tbody td"]),
        (
            "stability",
            reverse("evaluation:stability", args=[slug]),
            ["table.stability-summary tbody td.lead", "table.stability-questions tbody td.lead"],
        ),
        ("samples", reverse("annotation:sampling", args=[slug]), ["table.sample-list tbody td.lead"]),
        (
            "sample",
            reverse("annotation:sample_detail", args=[slug, sample.pk]),
            ["table.cluster-table tbody td.lead"],
        ),
        (
            "history",
            reverse("evaluation:history", args=[slug, "veracity"]),
            ["table.history-table tbody td.lead"],
        ),
        (
            "report",
            reverse("evaluation:report", args=[slug, "relevance"]),
            [
                "table.answer-table tbody td.lead",
                "table.planner-table tbody td.lead",
                "table.full-table tbody td.lead",
                "table.judges-compared tbody td.lead",
                "table.agreement-curve tbody td.lead",
                "table.automatic-metric-table tbody td.lead",
            ],
        ),
        (
            "categories",
            reverse("evaluation:report", args=[slug, "correctness"]),
            ["table.category-table tbody td.lead"],
        ),
    ]


@pytest.mark.django_db(transaction=True)
def test_each_wide_table_shows_its_first_row_key_figure_on_a_phone(live_server, browser):
    campaign = load_demo().campaign
    campaign.label_hourly_rate = 30.0  # so that the planner plans
    campaign.save(update_fields=["label_hourly_rate"])
    run = JudgeRun.objects.filter(campaign=campaign).order_by("pk").first()
    sample = Sample.objects.filter(campaign=campaign, design="kmeans").order_by("pk").first()
    admin = get_user_model().objects.get(username=DEMO_SUPERUSER)
    outside: list[str] = []
    for locale in ("en-GB", "fr-FR"):
        context, page, problems = open_context(browser, live_server, width=WIDTH, locale=locale, user=admin)
        for name, path, figures in phone_pages(campaign, run, sample):
            page.goto(live_server.url + path)
            settle(page)
            if name == "confidence":  # the split shows once its form is sent with its defaults
                with page.expect_navigation():
                    page.locator(f"form[method=get][action='{path}'] button[type=submit]").click()
                settle(page)
            if name == "report":  # the folded part, as printed
                page.evaluate(
                    "document.querySelectorAll('details.report-method').forEach((d) => { d.open = true; })"
                )
            shoot(page, f"{name}-{locale[:2]}-{WIDTH}.png")
            assert overflow(page) <= 0, (name, page.evaluate(STICKING_OUT))
            scrolling = page.evaluate(SCROLLING)
            if scrolling and max(scrolling) > 0:
                outside.append(f"{locale} {name}: a table scrolls sideways by {max(scrolling)} px")
            for selector in figures:
                box = page.locator(selector).first.bounding_box()
                assert box is not None, (locale, name, selector)
                if box["x"] < 0 or box["x"] + box["width"] > WIDTH:
                    outside.append(f"{locale} {name}: {selector} at {box}")
        assert problems == [], problems
        context.close()
    assert outside == [], "\n".join(outside)
