"""The annotation pages' small filters: shares in percent in the reader's typography."""

from __future__ import annotations

from django.utils import translation

from annotation.templatetags.annotation_format import percent


def test_a_share_in_percent_is_written_as_the_reader_writes_it():
    with translation.override("en"):
        assert percent(66.666) == "66.7%"
    with translation.override("fr"):
        assert percent(66.666) == "66,7\u00a0%"
        assert percent(100) == "100,0\u00a0%"
    assert percent(None) == "—"
    assert percent(float("nan")) == "—"
