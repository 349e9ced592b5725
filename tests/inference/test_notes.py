"""The estimators' notes: English text from constant templates, read back and translated."""

from __future__ import annotations

import numpy as np

from evaluation.templatetags import report_extras
from inference import intervals, notes
from inference.estimators import means

# A stand-in catalogue: every template in capitals, placeholders kept (and one reordered), so
# that the tests need no compiled French catalogue.
CATALOGUE = {template: template.upper().replace("%(NOTE)S", "%(note)s") for template in notes.TEMPLATES}
CATALOGUE[notes.GROUPS_WITHOUT_ESTIMATE] = "GROUPS: %(groups)s, WITHOUT ESTIMATE: %(missing)s"
CATALOGUE[notes.MISSING_JUDGMENTS] = "NO JUDGMENT FOR %(count)s UNITS"


def shout(text: str) -> str:
    return CATALOGUE.get(text, text)


def test_a_plain_note_is_translated_whole():
    assert notes.translate(notes.NO_SAMPLE, shout) == notes.NO_SAMPLE.upper()


def test_a_note_with_numbers_keeps_them_in_the_translations_order():
    note = notes.GROUPS_WITHOUT_ESTIMATE % {"missing": 1, "groups": 2}
    assert note == "1 of 2 groups have no estimate"
    assert notes.translate(note, shout) == "GROUPS: 2, WITHOUT ESTIMATE: 1"


def test_nested_and_joined_notes_are_translated_part_by_part():
    inner = notes.joined([notes.HUMAN_ONLY, notes.FLOORED])
    note = notes.OVERALL % {"note": notes.OF_ESTIMATOR["PPI++"] % {"note": inner}}
    assert note == (
        "overall PPI++: no unlabeled units: lambda 0 (human labels only); "
        "rare disagreements or equal labels: rectifier variance floored"
    )
    assert notes.translate(note, shout) == (
        f"OVERALL PPI++: {notes.HUMAN_ONLY.upper()}; {notes.FLOORED.upper()}"
    )


def test_an_unknown_text_comes_back_unchanged():
    assert notes.translate("a note of another version", shout) == "a note of another version"
    assert notes.translate("human: a note of another version", shout) == "HUMAN: a note of another version"


def test_the_estimators_notes_are_made_of_the_templates():
    one = means.classical_mean(y=np.array([1.0]), alpha=0.05)
    assert one.note == notes.ONE_LABEL
    cut = intervals.stratified_combine(
        parts=[(one, 3), (intervals.nan_interval(method="m", alpha=0.05, n=0, note="x"), 2)],
        alpha=0.05,
        method="stratified",
    )
    assert notes.translate(cut.note, shout) == "GROUPS: 2, WITHOUT ESTIMATE: 1"
    assert intervals.WILSON_NOTE == notes.WILSON and intervals.CLIPPED_NOTE == notes.CLIPPED


def test_every_template_is_marked_for_the_catalogue():
    assert set(report_extras._NOTE_TEMPLATES) == set(notes.TEMPLATES)
    assert len(notes.TEMPLATES) == len(set(notes.TEMPLATES))
