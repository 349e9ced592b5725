"""The judge of imported labels: found or created in one place, and refused the same way by the
campaign import and by the Label Studio import when the name belongs to a judge that runs."""

from __future__ import annotations

import pytest

from annotation.ingest import ImportFailed
from evaluation.interchange.loading import import_labels
from evaluation.interchange.vocabulary import check_vocabulary
from evaluation.judge.imported import NotAnImportedJudge, existing_imported_judge, imported_judge
from evaluation.models import Judge, Judgment
from tests.interchange_files import LABEL_STUDIO_FILE, LABEL_STUDIO_MAPPING, fixture_answers

MESSAGE = "the campaign's judge 'gpt' is not an imported judge; name another or rename it"


def test_one_imported_judge_per_name_created_on_first_use(campaign):
    assert existing_imported_judge(campaign=campaign, name="gpt") is None
    made = imported_judge(campaign=campaign, name="gpt")
    assert (made.kind, made.language) == (Judge.Kind.IMPORTED, campaign.expected_language or "fr")
    assert (
        imported_judge(campaign=campaign, name="gpt")
        == made
        == existing_imported_judge(campaign=campaign, name="gpt")
    )


def test_a_judge_that_runs_takes_no_imported_labels_from_either_import(campaign):
    Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    with pytest.raises(NotAnImportedJudge) as refused:
        imported_judge(campaign=campaign, name="gpt")
    assert refused.value.field == "judge" and str(refused.value.message) == MESSAGE
    fixture_answers(campaign)
    vocabulary = check_vocabulary(mapping=LABEL_STUDIO_MAPPING, name="mapping")
    with pytest.raises(ImportFailed) as failed:
        import_labels(
            path=LABEL_STUDIO_FILE,
            fmt="label-studio",
            campaign=campaign,
            vocabulary=vocabulary,
            judge_name="gpt",
        )
    assert [(error.field, str(error.message)) for error in failed.value.errors] == [("judge", MESSAGE)]
    assert not Judgment.objects.exists()
