"""Guidelines versions: recorded from the criterion's texts, a new one after each edit, never changed."""

from __future__ import annotations

import pytest

from annotation.criteria.guidelines import current_version
from annotation.models import Criterion, CriterionVersion

pytestmark = pytest.mark.django_db


def test_versions_follow_the_edits_and_keep_their_texts(campaign):
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    first = current_version(criterion=criterion)
    assert (first.number, first.guidelines, first.judge_prompt) == (1, criterion.guidelines, "")
    assert current_version(criterion=Criterion.objects.get(pk=criterion.pk)) == first
    criterion.judge_prompt = "Be strict."
    criterion.save()
    second = current_version(criterion=criterion)
    assert (second.number, second.judge_prompt) == (2, "Be strict.")
    first.refresh_from_db()
    assert first.judge_prompt == ""
    assert Criterion.objects.get(pk=criterion.pk).current_version == second
    assert CriterionVersion.objects.filter(criterion=criterion).count() == 2


def test_an_unchanged_criterion_loaded_with_its_version_costs_no_query(campaign, django_assert_num_queries):
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    version = current_version(criterion=criterion)
    loaded = Criterion.objects.select_related("current_version").get(pk=criterion.pk)
    with django_assert_num_queries(0):
        assert current_version(criterion=loaded) == version
