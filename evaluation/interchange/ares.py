"""A report with the keys ARES (stanford-futuredata/ARES) gives its results, so that tools
reading ARES output read ours.

One result per theme and one for the whole campaign, each built from the report's JSON
(``evaluation.estimates.report.report_as_json``), so the numbers are the report's own:

- ``ARES_Prediction``: the PPI++ estimate; ``ARES_Confidence_Interval``: its interval [lo, hi];
- ``Pre_PPI_Score``: the judge-only rate; ``Ground_Truth_Performance``: the human-only rate;
- ``ARES_LLM_Judge_Accuracy_on_Ground_Truth_Labels``: observed agreement on the paired units;
- ``Number_of_Examples_in_Evaluation_Set``: units the judge labelled; ``Annotated_Examples_used_for_PPI``:
  units labelled by both (the PPI++ labelled set);
- ``Label_Column``: the criterion; ``Evaluation_Set``: campaign and theme.

ARES rounds to three places; these are the report's numbers unrounded. Attest's own context
follows under ``Attest_*`` keys (judge, method, alpha, theme).
"""

from __future__ import annotations

from typing import Any


def _result(report: dict[str, Any], group: dict[str, Any], theme: str) -> dict[str, Any]:
    ci = group.get("ppi_ci")
    return {
        "Label_Column": report["criterion"],
        "Evaluation_Set": f"{report['campaign']} / {theme}",
        "ARES_Prediction": group.get("ppi_mean"),
        "ARES_Confidence_Interval": list(ci) if ci is not None else None,
        "Number_of_Examples_in_Evaluation_Set": group.get("n_judge"),
        "Ground_Truth_Performance": group.get("human_mean"),
        "ARES_LLM_Judge_Accuracy_on_Ground_Truth_Labels": group.get("observed_agreement"),
        "Annotated_Examples_used_for_PPI": group.get("n_paired"),
        "Pre_PPI_Score": group.get("judge_mean"),
        "Attest_Theme": theme,
        "Attest_Judge": report["judge"],
        "Attest_Method": report["method"],
        "Attest_Alpha": report["alpha"],
    }


def ares_results(*, report: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's JSON as ARES results: one per theme, then the overall one (theme ``all``)."""
    results = [_result(report, group, group["theme"]) for group in report["themes"]]
    results.append(_result(report, report["overall"], report["overall"].get("theme") or "all"))
    return results
