"""The anytime mode's pages: start a sequence, draw the next batch, the status table, the
fragment the work page loads for managers and analysts; refusals, access, query counts."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Label, Sample, Stage
from evaluation.designs import anytime, anytime_status
from tests.factories import judged_corpus

pytestmark = pytest.mark.django_db


@pytest.fixture
def judged(campaign):
    criterion, judge, units = judged_corpus(campaign=campaign, answers_per_theme={"Finance": 8, "RH": 4})
    return criterion, judge


def url(campaign) -> str:
    return reverse("evaluation:anytime", args=[campaign.slug])


def fragment_url(campaign) -> str:
    return reverse("evaluation:anytime_work", args=[campaign.slug])


DEFAULTS = {
    "criterion": "veracity",
    "judge": "gpt",
    "target_halfwidth": "0.05",
    "batch_size": "20",
    "alpha": "0.05",
    "seed": "0",
}


def _label_all(sample) -> None:
    for shape in sample.design_parameters["themes"].values():
        for unit_id in {u for u, _ in shape["draws"]}:
            if not Label.objects.filter(unit_id=unit_id, criterion=sample.criterion).exists():
                Label.objects.create(
                    unit_id=unit_id, criterion=sample.criterion, stage=Stage.IMPORTED, value=unit_id % 2
                )


def test_the_page_shows_the_form_with_its_defaults_and_no_sequence(client_for, manager, campaign, judged):
    response = client_for(manager).get(url(campaign))
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="anytime-start"' in page and 'value="0.05"' in page and 'value="20"' in page
    assert "No anytime sequence is open" in page
    assert not Sample.objects.exists()


def test_starting_draws_the_first_batch_and_the_table_shows_each_theme(client_for, manager, campaign, judged):
    client = client_for(manager)
    response = client.post(url(campaign), DEFAULTS)
    assert response.status_code == 302 and response["Location"] == url(campaign)
    sample = Sample.objects.get()
    assert sample.design == Sample.Design.SEQUENTIAL and sample.created_by == manager
    page = client.get(url(campaign)).content.decode()
    assert page.count("<tr>") >= 3 and "Finance" in page and "RH" in page
    assert "Waiting for" in page
    assert reverse("evaluation:anytime_next", args=[campaign.slug, sample.pk]) in page


def test_the_next_batch_then_the_status_says_stop_or_how_many_more(client_for, manager, campaign, judged):
    client = client_for(manager)
    client.post(url(campaign), {**DEFAULTS, "target_halfwidth": "0.3", "batch_size": "10"})
    first = Sample.objects.get()
    _label_all(first)
    response = client.post(reverse("evaluation:anytime_next", args=[campaign.slug, first.pk]))
    assert response.status_code == 302
    second = Sample.objects.order_by("-pk").first()
    assert second.pk != first.pk
    _label_all(second)
    status = anytime_status.sequence_status(sample=second)
    page = client.get(url(campaign)).content.decode()
    for row in status.themes:
        if row.state == anytime_status.STOP:
            assert "Precise enough, stop" in page
        elif row.state == anytime_status.MORE:
            assert f"About {row.more_labels} more label" in page


def test_a_stale_batch_is_refused_with_a_message_and_nothing_drawn(client_for, manager, campaign, judged):
    client = client_for(manager)
    client.post(url(campaign), DEFAULTS)
    first = Sample.objects.get()
    client.post(reverse("evaluation:anytime_next", args=[campaign.slug, first.pk]))
    count = Sample.objects.count()
    response = client.post(reverse("evaluation:anytime_next", args=[campaign.slug, first.pk]), follow=True)
    assert "is not the latest batch" in response.content.decode()
    assert Sample.objects.count() == count


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"judge": ""}, "judge", "choose a judge of this campaign"),
        ({"target_halfwidth": "0"}, "target_halfwidth", "is not a half-width"),
        ({"target_halfwidth": "abc"}, "target_halfwidth", "is not a number"),
        ({"batch_size": "0"}, "batch_size", "give a whole number from 1"),
        ({"alpha": "0.7"}, "alpha", "at most 0.2"),
    ],
)
def test_refusals_are_shown_on_their_field_and_write_nothing(
    client_for, manager, campaign, judged, changes, field, message
):
    response = client_for(manager).post(url(campaign), {**DEFAULTS, **changes})
    assert response.status_code == 400
    page = response.content.decode()
    assert f'id="id_{field}_error"' in page and message in page
    assert not Sample.objects.exists()


def test_analysts_see_the_status_but_cannot_operate(client_for, analyst, campaign, judged):
    criterion, judge = judged
    sample = anytime.start_sequence(criterion=criterion, judge=judge)
    client = client_for(analyst)
    page = client.get(url(campaign)).content.decode()
    assert "Finance" in page and 'id="anytime-start"' not in page and "anytime-next" not in page
    assert client.post(url(campaign), DEFAULTS).status_code == 403
    assert client.post(reverse("evaluation:anytime_next", args=[campaign.slug, sample.pk])).status_code == 403
    assert Sample.objects.count() == 1


def test_access(client, client_for, annotator, outsider, campaign, judged):
    for address in (url(campaign), fragment_url(campaign)):
        assert client.get(address).status_code == 302
    for address in (url(campaign), fragment_url(campaign)):
        assert client_for(outsider).get(address).status_code == 404
        assert client_for(annotator).get(address).status_code == 403
    assert client_for(annotator).put(url(campaign)).status_code == 405
    assert client_for(annotator).post(fragment_url(campaign)).status_code == 405


def test_access_to_the_next_batch(client, client_for, manager, annotator, outsider, campaign, judged):
    criterion, judge = judged
    sample = anytime.start_sequence(criterion=criterion, judge=judge)
    address = reverse("evaluation:anytime_next", args=[campaign.slug, sample.pk])
    assert client.post(address).status_code == 302 and "login" in client.post(address)["Location"]
    assert client_for(outsider).post(address).status_code == 404
    assert client_for(annotator).post(address).status_code == 403
    assert client_for(manager).get(address).status_code == 405
    # Another campaign's sample, or a sample of another design: 404.
    other = Sample.objects.create(campaign=campaign, criterion=criterion, status=Sample.Status.DONE)
    wrong = reverse("evaluation:anytime_next", args=[campaign.slug, other.pk])
    assert client_for(manager).post(wrong).status_code == 404
    assert Sample.objects.count() == 2


def test_the_fragment_is_the_status_without_the_page(client_for, manager, campaign, judged):
    criterion, judge = judged
    anytime.start_sequence(criterion=criterion, judge=judge)
    response = client_for(manager).get(fragment_url(campaign), headers={"HX-Request": "true"})
    assert response.status_code == 200
    page = response.content.decode()
    assert "<html" not in page and 'id="anytime-sequences"' in page and "Finance" in page


def test_the_fragment_is_empty_without_an_open_sequence(client_for, analyst, campaign, judged):
    response = client_for(analyst).get(fragment_url(campaign), headers={"HX-Request": "true"})
    assert response.status_code == 200 and response.content.decode().strip() == ""


def test_the_work_page_loads_the_section_for_managers_and_analysts_only(
    client_for, manager, analyst, annotator, campaign, judged
):
    work = reverse("annotation:work", args=[campaign.slug])
    for user in (manager, analyst):
        assert fragment_url(campaign) in client_for(user).get(work).content.decode()
    page = client_for(annotator).get(work).content.decode()
    assert fragment_url(campaign) not in page and "anytime" not in page.lower()


def test_the_sampling_and_confidence_pages_link_here(client_for, manager, campaign, judged):
    client = client_for(manager)
    for name in ("annotation:sampling", "evaluation:confidence_sample"):
        assert url(campaign) in client.get(reverse(name, args=[campaign.slug])).content.decode()


def test_the_page_and_the_fragment_read_in_a_fixed_number_of_queries(
    client_for, manager, campaign, judged, django_assert_num_queries
):
    criterion, judge = judged
    sample = anytime.start_sequence(criterion=criterion, judge=judge, batch_size=5)
    _label_all(sample)
    client = client_for(manager)
    client.get(url(campaign))
    with django_assert_num_queries(PAGE_QUERIES):
        client.get(url(campaign))
    with django_assert_num_queries(FRAGMENT_QUERIES):
        client.get(fragment_url(campaign))
    # Another batch and more labels: the same numbers.
    _label_all(anytime.next_batch(sample=sample))
    with django_assert_num_queries(PAGE_QUERIES):
        client.get(url(campaign))
    with django_assert_num_queries(FRAGMENT_QUERIES):
        client.get(fragment_url(campaign))


# Session, user, campaign, membership; the criteria, the current sample of each (three
# criteria); for the open sequence: its judge, the final labels of its drawn units, the units and
# the confidences. The page adds the form's default judge, criterion (with the units labelled
# per criterion, to open on one with a pilot) and rendered choices. Neither grows with the units,
# the draws or the batches.
FRAGMENT_QUERIES = 12
PAGE_QUERIES = 20


def test_a_sequence_started_without_a_pilot_says_so_and_one_with_a_pilot_does_not(
    client_for, manager, campaign, judged
):
    criterion, judge = judged
    client = client_for(manager)
    assert client.post(url(campaign), DEFAULTS).status_code == 302
    sample = Sample.objects.get()
    assert sample.design_parameters["pilot_labels"] == 0
    assert "Started without a pilot" in client.get(url(campaign)).content.decode()
    # A pilot of 20 labels, then a new sequence: recalibrated, nothing said.
    for unit in campaign.units.filter(level=criterion.level).order_by("id")[:20]:
        Label.objects.get_or_create(
            unit=unit, criterion=criterion, stage=Stage.IMPORTED, defaults={"value": 1}
        )
    assert client.post(url(campaign), {**DEFAULTS, "seed": "1"}).status_code == 302
    assert Sample.objects.latest("pk").design_parameters["calibration"]["labels"] >= 20
    assert "Started without a pilot" not in client.get(url(campaign)).content.decode()
