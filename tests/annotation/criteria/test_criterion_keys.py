"""A criterion's own label keys: one character each, different, none of the page's other keys."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.urls import reverse

from annotation.models import Criterion, Stage
from tests.factories import member, sampled

pytestmark = pytest.mark.django_db


def criterion_with(campaign, positive: str, negative: str) -> Criterion:
    return Criterion(
        campaign=campaign,
        name="tone",
        title="Tone",
        level="answer",
        positive_key=positive,
        negative_key=negative,
    )


@pytest.mark.parametrize(
    ("positive", "negative", "field"),
    [
        ("s", "n", "positive_key"),
        ("y", "u", "negative_key"),
        ("C", "n", "positive_key"),
        ("?", "n", "positive_key"),
        ("", "n", "positive_key"),
        (" ", "n", "positive_key"),
        ("y", "y", "negative_key"),
        ("y", "Y", "negative_key"),
    ],
)
def test_unusable_keys_are_refused_naming_the_field(campaign, positive, negative, field):
    with pytest.raises(ValidationError) as refused:
        criterion_with(campaign, positive, negative).full_clean()
    assert field in refused.value.message_dict


@pytest.mark.parametrize(
    ("positive", "negative"), [("s", "n"), ("y", "y"), ("y", "Y"), ("", "0"), ("1", "?")]
)
def test_the_database_refuses_unusable_keys_too(campaign, positive, negative):
    with pytest.raises(IntegrityError), transaction.atomic():
        criterion_with(campaign, positive, negative).save()


def test_distinct_visible_keys_are_accepted(campaign):
    criterion = criterion_with(campaign, "y", "n")
    criterion.full_clean()
    criterion.save()
    assert Criterion.objects.get(pk=criterion.pk).positive_key == "y"


def test_the_annotator_page_offers_the_criterion_keys(client_for, campaign):
    criterion, units = sampled(campaign=campaign, answers=1)
    Criterion.objects.filter(pk=criterion.pk).update(positive_key="o", negative_key="n")
    annotator = member(campaign, "annotator")
    page = client_for(annotator).get(
        reverse("annotation:annotate", args=[campaign.slug, criterion.name, Stage.LABEL])
    )
    text = page.content.decode()
    assert 'data-key="o" data-value="1"' in text and 'data-key="n" data-value="0"' in text
    # The list of keys says both work: the criterion's own and the digit.
    assert "<kbd>o</kbd> or <kbd>1</kbd>" in text and "<kbd>n</kbd> or <kbd>0</kbd>" in text
