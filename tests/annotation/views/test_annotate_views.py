"""The annotator page: full page and htmx partial, submit/skip/undo, access rules, what stays hidden."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.models import AnnotationMode, Assignment, Criterion, Label, Role, Stage, Unit
from annotation.workflow import final_labels, next_unit
from evaluation.models import Judge, Judgment
from tests.factories import FRONT_HELD_APART, import_label, label, make_answer, member, sample_units, sampled

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def url(campaign, criterion, stage, action: str = "") -> str:
    name = f"annotation:annotate_{action}" if action else "annotation:annotate"
    return reverse(name, args=[campaign.slug, criterion.name, stage])


def shown_unit(response) -> int | None:
    found = re.search(r'id="work"[^>]*data-unit="(\d*)"', response.content.decode())
    assert found, "the work region is missing"
    return int(found.group(1)) if found.group(1) else None


def request_key(response) -> str:
    return re.search(r'name="request_key" value="([0-9a-f]+)"', response.content.decode()).group(1)


@pytest.fixture
def relevance(campaign):
    criterion, units = sampled(campaign=campaign, answers=3)
    return criterion, units


@pytest.fixture
def veracity(campaign):
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="veracity")
    answer = make_answer(
        campaign=campaign,
        text=(
            "Le chiffre d'affaires **2023** atteint 12 M€ [^c1^]. Il progresse de 8 % [^c2^].\n\n"
            "- La marge reste stable [^zz9^].\n- <script>alert(1)</script> est une ligne piégée."
        ),
        sentences=[
            ("Le chiffre d'affaires **2023** atteint 12 M€ [^c1^].", ["c1"]),
            ("La marge reste stable [^zz9^].", ["zz9"]),
        ],
        chunk_ids=("c1", "c2", "c3"),
    )
    units = list(Unit.objects.filter(answer=answer, level="sentence").order_by("sentence__position"))
    sample_units(criterion=criterion, units=units)
    return criterion, units


# Page and partial


def test_full_page_shows_the_unit_guidelines_keys_and_progress(client_for, annotator, campaign, relevance):
    criterion, units = relevance
    response = client_for(annotator).get(url(campaign, criterion, Stage.LABEL))
    assert response.status_code == 200
    page = response.content.decode()
    assert "<html" in page and 'hx-headers=\'{"X-CSRFToken"' in page
    assert shown_unit(response) == units[0].pk
    assert "js/annotate.js" in page
    assert criterion.guidelines[:40] in page
    assert "<kbd>s</kbd>" in page and "<kbd>u</kbd>" in page and "<kbd>?</kbd>" in page
    assert 'data-key="1"' in page and 'data-key="0"' in page
    assert 'hx-post="' + url(campaign, criterion, Stage.LABEL, "submit") + '"' in page
    assert Assignment.objects.get(user=annotator).unit == units[0]


def test_htmx_get_returns_only_the_unit_fragment(client_for, annotator, campaign, relevance):
    criterion, units = relevance
    response = client_for(annotator).get(url(campaign, criterion, Stage.LABEL), **HTMX)
    page = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in page and 'id="work"' in page
    assert shown_unit(response) == units[0].pk


def test_reloading_the_page_keeps_my_unit(client_for, annotator, campaign, relevance):
    criterion, units = relevance
    client = client_for(annotator)
    first = shown_unit(client.get(url(campaign, criterion, Stage.LABEL)))
    assert shown_unit(client.get(url(campaign, criterion, Stage.LABEL))) == first


def test_submit_by_htmx_stores_the_label_and_returns_the_next_unit(
    client_for, annotator, campaign, relevance
):
    criterion, units = relevance
    client = client_for(annotator)
    page = client.get(url(campaign, criterion, Stage.LABEL))
    data = {"unit_id": units[0].pk, "value": "1", "comment": "", "request_key": request_key(page)}
    response = client.post(url(campaign, criterion, Stage.LABEL, "submit"), data, **HTMX)
    assert response.status_code == 200
    assert "<html" not in response.content.decode()
    assert shown_unit(response) == units[1].pk
    stored = Label.objects.get()
    assert (stored.unit, stored.user, stored.stage, stored.value) == (units[0], annotator, Stage.LABEL, 1)


def test_prefetch_leases_the_following_unit_to_me_and_nobody_else(client_for, annotator, campaign, relevance):
    criterion, units = relevance
    client = client_for(annotator)
    assert shown_unit(client.get(url(campaign, criterion, Stage.LABEL))) == units[0].pk
    ahead = client.get(url(campaign, criterion, Stage.LABEL) + f"?after={units[0].pk}", **HTMX)
    assert ahead.status_code == 200 and "<html" not in ahead.content.decode()
    assert shown_unit(ahead) == units[1].pk
    # Asking again returns the same unit: never a third lease.
    again = client.get(url(campaign, criterion, Stage.LABEL) + f"?after={units[0].pk}", **HTMX)
    assert shown_unit(again) == units[1].pk
    held = Assignment.objects.filter(user=annotator, label__isnull=True).values_list("unit_id", flat=True)
    assert sorted(held) == [units[0].pk, units[1].pk]
    other = member(campaign, Role.ANNOTATOR)
    assert next_unit(user=other, criterion=criterion, stage=Stage.LABEL) == units[2]


def test_after_a_submit_the_server_hands_out_the_prefetched_unit(client_for, annotator, campaign, relevance):
    criterion, units = relevance
    client = client_for(annotator)
    page = client.get(url(campaign, criterion, Stage.LABEL))
    assert (
        f'data-prefetch="{url(campaign, criterion, Stage.LABEL)}?after={units[0].pk}"'
        in page.content.decode()
    )
    ahead = client.get(url(campaign, criterion, Stage.LABEL) + f"?after={units[0].pk}", **HTMX)
    data = {"unit_id": units[0].pk, "value": "1", "request_key": request_key(page)}
    response = client.post(url(campaign, criterion, Stage.LABEL, "submit"), data, **HTMX)
    assert shown_unit(response) == shown_unit(ahead) == units[1].pk
    # The prefetched fragment carries its own request key: its label is stored once, on its unit.
    data = {"unit_id": units[1].pk, "value": "0", "request_key": request_key(ahead)}
    client.post(url(campaign, criterion, Stage.LABEL, "submit"), data, **HTMX)
    client.post(url(campaign, criterion, Stage.LABEL, "submit"), data, **HTMX)
    assert list(Label.objects.order_by("pk").values_list("unit_id", "value")) == [
        (units[0].pk, 1),
        (units[1].pk, 0),
    ]


def test_a_label_naming_the_unit_on_screen_is_answered_with_the_unit_after_it(
    client_for, annotator, campaign, relevance
):
    criterion, units = relevance
    client = client_for(annotator)
    page = client.get(url(campaign, criterion, Stage.LABEL))
    ahead = client.get(url(campaign, criterion, Stage.LABEL) + f"?after={units[0].pk}", **HTMX)
    # The page shows the prefetched unit as it sends the label: the answer is the one after it,
    # leased to me, with the counts after this label; the unit on screen is not rendered again.
    data = {"unit_id": units[0].pk, "value": "1", "request_key": request_key(page), "shown": units[1].pk}
    response = client.post(url(campaign, criterion, Stage.LABEL, "submit"), data, **HTMX)
    answer = response.content.decode()
    assert response.status_code == 200 and "<html" not in answer
    assert shown_unit(response) == units[2].pk
    assert f'data-after="{units[1].pk}"' in answer
    assert "You <strong>1</strong>" in answer
    held = Assignment.objects.filter(user=annotator, label__isnull=True).values_list("unit_id", flat=True)
    assert sorted(held) == [units[1].pk, units[2].pk]
    assert next_unit(user=member(campaign, Role.ANNOTATOR), criterion=criterion, stage=Stage.LABEL) is None
    # The last unit: nothing follows it, and the answer says so, still after the unit on screen.
    data = {"unit_id": units[1].pk, "value": "0", "request_key": request_key(ahead), "shown": units[2].pk}
    last = client.post(url(campaign, criterion, Stage.LABEL, "submit"), data, **HTMX)
    assert shown_unit(last) is None and f'data-after="{units[2].pk}"' in last.content.decode()
    data = {"unit_id": units[2].pk, "value": "1", "request_key": request_key(response)}
    client.post(url(campaign, criterion, Stage.LABEL, "submit"), data, **HTMX)
    assert list(Label.objects.order_by("pk").values_list("unit_id", "value")) == [
        (units[0].pk, 1),
        (units[1].pk, 0),
        (units[2].pk, 1),
    ]


def test_a_label_naming_a_unit_no_longer_mine_is_answered_with_the_unit_i_hold_now(
    client_for, annotator, campaign, relevance
):
    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import OpenSlot

    criterion, units = relevance
    client = client_for(annotator)
    page = client.get(url(campaign, criterion, Stage.LABEL))
    client.get(url(campaign, criterion, Stage.LABEL) + f"?after={units[0].pk}", **HTMX)
    # The prefetched unit's lease runs out and someone else takes it.
    past = timezone.now() - timedelta(seconds=1)
    Assignment.objects.filter(user=annotator, unit=units[1]).update(expires_at=past)
    OpenSlot.objects.filter(unit=units[1]).update(held_until=past)
    other = member(campaign, Role.ANNOTATOR)
    assert next_unit(user=other, criterion=criterion, stage=Stage.LABEL) == units[1]
    data = {"unit_id": units[0].pk, "value": "1", "request_key": request_key(page), "shown": units[1].pk}
    response = client.post(url(campaign, criterion, Stage.LABEL, "submit"), data, **HTMX)
    # The label is stored; the page is handed the unit to show instead, not one to keep.
    assert shown_unit(response) == units[2].pk
    assert "data-after" not in response.content.decode()
    assert Label.objects.get().unit == units[0]
    assert Assignment.objects.get(unit=units[1], label__isnull=True).user == other


def test_a_refused_label_naming_the_unit_on_screen_is_answered_as_any_refusal(
    client_for, annotator, campaign, relevance
):
    criterion, units = relevance
    client = client_for(annotator)
    page = client.get(url(campaign, criterion, Stage.LABEL))
    client.get(url(campaign, criterion, Stage.LABEL) + f"?after={units[0].pk}", **HTMX)
    data = {"unit_id": units[0].pk, "value": "7", "request_key": request_key(page), "shown": units[1].pk}
    response = client.post(url(campaign, criterion, Stage.LABEL, "submit"), data, **HTMX)
    answer = response.content.decode()
    assert 'class="msg error"' in answer and "data-after" not in answer
    assert not Label.objects.exists()


def test_a_plain_get_ignores_after(client_for, annotator, campaign, relevance):
    criterion, units = relevance
    client = client_for(annotator)
    client.get(url(campaign, criterion, Stage.LABEL))
    page = client.get(url(campaign, criterion, Stage.LABEL) + f"?after={units[0].pk}")
    assert shown_unit(page) == units[0].pk
    assert Assignment.objects.filter(user=annotator).count() == 1


def test_a_double_submit_stores_one_label(client_for, annotator, campaign, relevance):
    criterion, units = relevance
    client = client_for(annotator)
    key = request_key(client.get(url(campaign, criterion, Stage.LABEL)))
    data = {"unit_id": units[0].pk, "value": "0", "request_key": key}
    client.post(url(campaign, criterion, Stage.LABEL, "submit"), data, **HTMX)
    again = client.post(url(campaign, criterion, Stage.LABEL, "submit"), data, **HTMX)
    assert again.status_code == 200
    assert Label.objects.count() == 1
    assert shown_unit(again) == units[1].pk


def test_submit_without_javascript_redirects_to_the_page(client_for, annotator, campaign, relevance):
    criterion, units = relevance
    client = client_for(annotator)
    client.get(url(campaign, criterion, Stage.LABEL))
    response = client.post(
        url(campaign, criterion, Stage.LABEL, "submit"), {"unit_id": units[0].pk, "value": "1"}
    )
    assert response.status_code == 302
    assert response["Location"] == url(campaign, criterion, Stage.LABEL)
    assert shown_unit(client.get(response["Location"])) == units[1].pk


def test_skip_gives_the_next_unit_and_undo_gives_the_unit_back(client_for, annotator, campaign, relevance):
    criterion, units = relevance
    client = client_for(annotator)
    client.get(url(campaign, criterion, Stage.LABEL))
    skipped = client.post(url(campaign, criterion, Stage.LABEL, "skip"), {"unit_id": units[0].pk}, **HTMX)
    assert shown_unit(skipped) == units[1].pk
    client.post(
        url(campaign, criterion, Stage.LABEL, "submit"), {"unit_id": units[1].pk, "value": "1"}, **HTMX
    )
    undone = client.post(url(campaign, criterion, Stage.LABEL, "undo"), {"request_key": "undo-1"}, **HTMX)
    assert shown_unit(undone) == units[1].pk
    assert "withdrawn" in undone.content.decode()
    assert list(Label.objects.order_by("pk").values_list("value", flat=True)) == [1, None]


def test_a_unit_given_back_by_undo_marks_the_answer_withdrawn_and_selects_nothing(
    client_for, annotator, campaign, relevance
):
    criterion, units = relevance
    client = client_for(annotator)
    first = client.get(url(campaign, criterion, Stage.LABEL)).content.decode()
    assert "choice-previous" not in first and 'id="previous-note"' not in first
    client.post(
        url(campaign, criterion, Stage.LABEL, "submit"), {"unit_id": units[0].pk, "value": "0"}, **HTMX
    )
    undone = client.post(url(campaign, criterion, Stage.LABEL, "undo"), {"request_key": "u-1"}, **HTMX)
    page = undone.content.decode()
    assert shown_unit(undone) == units[0].pk
    marked = re.findall(r'<button type="submit" name="value" value="(\d)" class="[^"]*choice-previous', page)
    assert marked == ["0"]
    assert 'aria-describedby="previous-note"' in page and "your previous answer" in page
    assert re.search(
        r'id="previous-note"[^>]*>Your previous answer, withdrawn, is marked: 0, off topic\.', page
    )
    assert "autofocus" not in page and "You skipped" not in page


def test_the_page_hands_its_script_every_text_in_the_readers_language(
    client_for, annotator, campaign, relevance
):
    criterion, units = relevance
    client = client_for(annotator)
    page = client.get(url(campaign, criterion, Stage.LABEL), HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    found = re.search(r'<script id="annotate-texts" type="application/json">(.*?)</script>', page)
    assert found
    import json

    texts = json.loads(found.group(1))
    assert texts["key_too_soon"].startswith("Touche «\u00a0%(key)s\u00a0» non prise en compte")
    assert texts["save_and_label"] == "Enregistrer et étiqueter"
    assert all(text and text != key for key, text in texts.items())
    assert 'id="comment-dialog"' in page and "Échap" in page
    # The unit's fragment does not carry them again.
    fragment = client.get(url(campaign, criterion, Stage.LABEL), HTTP_ACCEPT_LANGUAGE="fr", **HTMX)
    assert "annotate-texts" not in fragment.content.decode()


def test_undo_with_nothing_to_undo_says_so(client_for, annotator, campaign, relevance):
    criterion, units = relevance
    response = client_for(annotator).post(url(campaign, criterion, Stage.LABEL, "undo"), {}, **HTMX)
    assert response.status_code == 200
    assert "Nothing to undo" in response.content.decode()


def test_an_empty_queue_says_nothing_is_left(client_for, annotator, campaign):
    make_answer(campaign=campaign)
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    response = client_for(annotator).get(url(campaign, criterion, Stage.LABEL))
    assert response.status_code == 200
    assert shown_unit(response) is None
    assert "Nothing left for you here" in response.content.decode()


def test_an_empty_queue_says_where_the_rest_of_the_stage_is(client_for, annotator, campaign, relevance):
    criterion, units = relevance  # 3 units
    import_label(unit=units[2], criterion=criterion, value=1)
    other = member(campaign, Role.ANNOTATOR)
    held = next_unit(user=other, criterion=criterion, stage=Stage.LABEL)
    assert held is not None
    label(annotator, criterion, Stage.LABEL, 1)
    response = client_for(annotator).get(url(campaign, criterion, Stage.LABEL))
    page = response.content.decode()
    assert shown_unit(response) is None and "Nothing left for you here" in page
    lease = Assignment.objects.get(user=other, label__isnull=True)
    rest = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.split('class="progress-rest"')[1]))
    assert "Where the 3 labels of this stage stand" in rest
    assert "Done by you 1" in rest and "Done by others 0" in rest
    assert "Already final (imported labels) 1" in rest
    assert f"Held by others 1 free again by {lease.expires_at:%H:%M} at the latest" in rest


def test_a_bad_value_is_a_400(client_for, annotator, campaign, relevance):
    criterion, units = relevance
    client = client_for(annotator)
    response = client.post(
        url(campaign, criterion, Stage.LABEL, "submit"), {"unit_id": units[0].pk, "value": "x"}
    )
    assert response.status_code == 400
    response = client.post(
        url(campaign, criterion, Stage.LABEL, "submit"), {"unit_id": units[0].pk, "value": "7"}
    )
    assert response.status_code == 400
    assert not Label.objects.exists()


# What each person sees


def test_sentence_page_highlights_the_sentence_shows_cited_sources_and_flags_broken_ids(
    client_for, annotator, campaign, veracity
):
    criterion, units = veracity
    client = client_for(annotator)
    page = client.get(url(campaign, criterion, Stage.LABEL)).content.decode()
    assert '<mark class="target">Le chiffre d&#x27;affaires <strong>2023</strong> atteint 12 M€' in page
    assert 'class="source-id">c1</code>' in page and "Texte c1." in page
    assert "Other retrieved sources" in page and 'class="source-id">c3</code>' in page
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "Broken citation" not in page
    # The second sentence cites an id the retriever never returned.
    client.post(
        url(campaign, criterion, Stage.LABEL, "submit"), {"unit_id": units[0].pk, "value": "1"}, **HTMX
    )
    page = client.get(url(campaign, criterion, Stage.LABEL), **HTMX).content.decode()
    assert "Broken citation" in page and 'class="cite broken">zz9</code>' in page
    assert "<li>" in page  # the list item of the answer keeps its structure


def test_answer_page_renders_escaped_text_with_line_breaks_and_light_markdown(
    client_for, annotator, campaign
):
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="relevance")
    answer = make_answer(
        campaign=campaign, text="**Synthèse** : oui.\nDeuxième ligne <b>brute</b>.\n\n1. premier\n2. second"
    )
    sample_units(criterion=criterion, units=[Unit.objects.get(answer=answer, level="answer")])
    page = client_for(annotator).get(url(campaign, criterion, Stage.LABEL)).content.decode()
    assert "<p><strong>Synthèse</strong> : oui.<br>Deuxième ligne &lt;b&gt;brute&lt;/b&gt;.</p>" in page
    assert "<ol><li>premier</li><li>second</li></ol>" in page


def test_hostile_question_answer_and_sources_come_out_escaped_never_run(client_for, annotator, campaign):
    from annotation.models import SourceChunk

    hostile = '<script>alert("x")</script> {{ csrf_token }} l\'"offre"'
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="veracity")
    sentence = f"Le chiffre {hostile} [^c1^]."
    answer = make_answer(campaign=campaign, text=f"{sentence}\n\n- {hostile}", sentences=[(sentence, ["c1"])])
    answer.question.text = f"Question {hostile} ?"
    answer.question.save()
    SourceChunk.objects.filter(campaign=campaign, external_id="c1").update(
        title=hostile, text=f"Source {hostile}"
    )
    sample_units(criterion=criterion, units=[Unit.objects.get(answer=answer, level="sentence")])
    page = client_for(annotator).get(url(campaign, criterion, Stage.LABEL)).content.decode()
    escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; {{ csrf_token }} l&#x27;&quot;offre&quot;"
    assert "<script>alert" not in page
    # The question; the sentence and the list item of its paragraph (the whole answer); the cited
    # source's title and text; the sentence's snippet, for the trail of last labels.
    assert page.count(escaped) == 6


def test_reviewer_sees_the_first_label_and_must_comment_to_override(
    client_for, annotator, reviewer, campaign, relevance
):
    criterion, units = relevance
    label(annotator, criterion, Stage.LABEL, 1, comment="Répond bien.")
    client = client_for(reviewer)
    page = client.get(url(campaign, criterion, Stage.REVIEW)).content.decode()
    assert "First label" in page and "Répond bien." in page
    assert re.search(r'value="0"[^>]*data-needs-comment="true"', page)
    assert not re.search(r'value="1"[^>]*data-needs-comment', page)
    refused = client.post(
        url(campaign, criterion, Stage.REVIEW, "submit"), {"unit_id": units[0].pk, "value": "0"}, **HTMX
    )
    assert refused.status_code == 200
    assert 'data-focus="comment"' in refused.content.decode()
    assert "needs a comment" in refused.content.decode()
    assert not Label.objects.filter(stage=Stage.REVIEW).exists()
    client.post(
        url(campaign, criterion, Stage.REVIEW, "submit"),
        {"unit_id": units[0].pk, "value": "0", "comment": "Parle d'autre chose."},
        **HTMX,
    )
    assert Label.objects.get(stage=Stage.REVIEW).comment == "Parle d'autre chose."


def test_the_first_labeller_never_sees_the_review_nor_the_judge(
    client_for, annotator, reviewer, campaign, relevance
):
    criterion, units = relevance
    label(annotator, criterion, Stage.LABEL, 1, unit=units[0])
    label(reviewer, criterion, Stage.REVIEW, 0, unit=units[0], comment="REVIEW-SECRET")
    judge = Judge.objects.create(campaign=campaign, name="gpt-judge")
    for unit in units:
        Judgment.objects.create(
            unit=unit, criterion=criterion, judge=judge, value=0, reasoning="JUDGE-SECRET", status="ok"
        )
    client = client_for(annotator)
    client.post(url(campaign, criterion, Stage.LABEL, "undo"), {}, **HTMX)  # refused: reviewed
    for response in (
        client.get(url(campaign, criterion, Stage.LABEL)),
        client.get(url(campaign, criterion, Stage.LABEL), **HTMX),
    ):
        page = response.content.decode()
        assert "REVIEW-SECRET" not in page and "JUDGE-SECRET" not in page and "gpt-judge" not in page
        assert "First label" not in page


def test_blind_mode_never_shows_the_other_label(client_for, campaign):
    campaign.annotation_mode = AnnotationMode.BLIND_DOUBLE
    campaign.save()
    criterion, units = sampled(campaign=campaign, answers=1)
    first, second = member(campaign, Role.ANNOTATOR), member(campaign, Role.ANNOTATOR)
    label(first, criterion, Stage.LABEL, 0, comment="BLIND-SECRET")
    page = client_for(second).get(url(campaign, criterion, Stage.LABEL)).content.decode()
    assert shown_unit_from(page) == units[0].pk
    assert "BLIND-SECRET" not in page and "First label" not in page
    assert "value-0" not in page


def shown_unit_from(page: str) -> int | None:
    found = re.search(r'id="work"[^>]*data-unit="(\d*)"', page)
    return int(found.group(1)) if found and found.group(1) else None


def test_review_stage_does_not_exist_in_blind_mode(client_for, reviewer, campaign):
    campaign.annotation_mode = AnnotationMode.BLIND_DOUBLE
    campaign.save()
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    assert client_for(reviewer).get(url(campaign, criterion, Stage.REVIEW)).status_code == 404


# Access


def test_anonymous_is_sent_to_login(client, campaign, relevance):
    criterion, units = relevance
    for target in (url(campaign, criterion, Stage.LABEL), url(campaign, criterion, Stage.LABEL, "submit")):
        response = client.get(target) if target.endswith("/label/") else client.post(target, {})
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_outsider_gets_404(client_for, outsider, campaign, relevance):
    criterion, units = relevance
    client = client_for(outsider)
    assert client.get(url(campaign, criterion, Stage.LABEL)).status_code == 404
    response = client.post(
        url(campaign, criterion, Stage.LABEL, "submit"), {"unit_id": units[0].pk, "value": "1"}
    )
    assert response.status_code == 404
    assert not Label.objects.exists()


def test_wrong_role_gets_403(client_for, reviewer, annotator, analyst, campaign, relevance):
    criterion, units = relevance
    assert client_for(reviewer).get(url(campaign, criterion, Stage.LABEL)).status_code == 403
    assert client_for(annotator).get(url(campaign, criterion, Stage.REVIEW)).status_code == 403
    client = client_for(analyst)
    for action in ("submit", "skip", "undo"):
        assert (
            client.post(url(campaign, criterion, Stage.LABEL, action), {"unit_id": units[0].pk}).status_code
            == 403
        )
    assert not Assignment.objects.exists()


def test_writes_refuse_get_and_the_page_refuses_post(client_for, annotator, campaign, relevance):
    criterion, units = relevance
    client = client_for(annotator)
    for action in ("submit", "skip", "undo"):
        assert client.get(url(campaign, criterion, Stage.LABEL, action)).status_code == 405
    assert client.post(url(campaign, criterion, Stage.LABEL)).status_code == 405


def test_htmx_post_without_csrf_token_is_refused(annotator, campaign, relevance):
    from django.test import Client

    criterion, units = relevance
    client = Client(enforce_csrf_checks=True)
    client.force_login(annotator)
    response = client.post(
        url(campaign, criterion, Stage.LABEL, "submit"), {"unit_id": units[0].pk, "value": "1"}, **HTMX
    )
    assert response.status_code == 403
    page = client.get(url(campaign, criterion, Stage.LABEL))
    token = re.search(r'"X-CSRFToken": "([^"]+)"', page.content.decode()).group(1)
    response = client.post(
        url(campaign, criterion, Stage.LABEL, "submit"),
        {"unit_id": units[0].pk, "value": "1"},
        HTTP_X_CSRFTOKEN=token,
        **HTMX,
    )
    assert response.status_code == 200
    assert Label.objects.count() == 1


def test_a_member_removed_between_two_posts_is_refused_at_once(client_for, annotator, campaign, relevance):
    from annotation.models import Membership

    criterion, _ = relevance
    client = client_for(annotator)
    response = client.get(url(campaign, criterion, Stage.LABEL), **HTMX)
    data = {"unit_id": shown_unit(response), "value": "1", "request_key": request_key(response)}
    Membership.objects.filter(campaign=campaign, user=annotator).delete()
    # No longer a member: the campaign is as unknown to them as any other.
    assert client.post(url(campaign, criterion, Stage.LABEL, "submit"), data, **HTMX).status_code == 404
    assert not Label.objects.exists()


def test_an_outsider_learns_nothing_about_criteria_either(client_for, outsider, campaign, relevance):
    client = client_for(outsider)
    unknown = client.get(reverse("annotation:annotate", args=[campaign.slug, "nope", "label"]))
    known = client.get(reverse("annotation:annotate", args=[campaign.slug, "relevance", "label"]))
    assert unknown.status_code == known.status_code == 404


def test_unknown_criterion_or_stage_is_404(client_for, annotator, campaign, relevance):
    criterion, _ = relevance
    client = client_for(annotator)
    assert (
        client.get(reverse("annotation:annotate", args=[campaign.slug, "nope", "label"])).status_code == 404
    )
    assert (
        client.get(
            reverse("annotation:annotate", args=[campaign.slug, criterion.name, "imported"])
        ).status_code
        == 404
    )


def test_the_whole_review_protocol_through_the_pages(
    client_for, annotator, reviewer, adjudicator, campaign, relevance
):
    criterion, units = relevance
    client = client_for(annotator)
    for unit in units:
        client.get(url(campaign, criterion, Stage.LABEL), **HTMX)
        client.post(
            url(campaign, criterion, Stage.LABEL, "submit"), {"unit_id": unit.pk, "value": "1"}, **HTMX
        )
    client = client_for(reviewer)
    client.get(url(campaign, criterion, Stage.REVIEW))
    client.post(
        url(campaign, criterion, Stage.REVIEW, "submit"), {"unit_id": units[0].pk, "value": "1"}, **HTMX
    )
    client.post(
        url(campaign, criterion, Stage.REVIEW, "submit"),
        {"unit_id": units[1].pk, "value": "0", "comment": "hors sujet"},
        **HTMX,
    )
    assert final_labels(criterion=criterion) == {units[0].pk: 1}
    assert next_unit(user=adjudicator, criterion=criterion, stage=Stage.ADJUDICATION) == units[1]


def test_without_a_sample_the_page_says_one_must_be_drawn(client_for, annotator, campaign):
    make_answer(campaign=campaign)
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    page = client_for(annotator).get(url(campaign, criterion, Stage.LABEL)).content.decode()
    assert "No sample has been drawn" in page


# Query counts


def campaign_of_size(answers: int):
    """A new campaign with ``answers`` sampled answers, its relevance criterion and an annotator."""
    from tests.factories import make_campaign

    campaign = make_campaign()
    criterion, units = sampled(campaign=campaign, answers=answers)
    return campaign, criterion, units, member(campaign, Role.ANNOTATOR)


def test_query_counts_of_the_page_and_the_submit_do_not_grow_with_the_campaign(
    client, django_assert_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def prepare(size: int):
        campaign, criterion, units, annotator = campaign_of_size(size)
        # Labels made by others: the queue and the progress must not read them one by one.
        for unit in units[2:]:
            label(member(campaign, Role.ANNOTATOR), criterion, Stage.LABEL, 1, unit=unit)
        client.force_login(annotator)
        client.get(url(campaign, criterion, Stage.LABEL))  # takes the lease; the next GETs renew it
        return campaign, criterion

    campaign, criterion = prepare(3)
    # Counted at once: the next request clears the connection's query log.
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url(campaign, criterion, Stage.LABEL))
    page = len(captured)
    data = {"unit_id": shown_unit(response), "value": "1", "request_key": request_key(response)}
    with CaptureQueriesContext(connection) as captured:
        client.post(url(campaign, criterion, Stage.LABEL, "submit"), data, **HTMX)
    submit = len(captured)
    # session, user, criterion with its campaign and the role; the lease: savepoint, my lease's
    # open slot held longer, the lease extended, unit, release; sources; both progress figures
    # in one query
    assert page == 10
    # session, user, criterion with its campaign and the role; the label: savepoint, unit lock
    # with its slots, its open slots locked, label, slot, the unit's closed slots deleted and
    # opened ones inserted, my counts, release; the next lease: savepoint, my lease (none), front
    # of the queue held (a second query on SQLite), lease inserted, unit, release; sources; progress
    assert submit == 3 + 9 + 6 + FRONT_HELD_APART + 2

    campaign, criterion = prepare(40)
    with django_assert_num_queries(page):
        response = client.get(url(campaign, criterion, Stage.LABEL))
    data = {"unit_id": shown_unit(response), "value": "1", "request_key": request_key(response)}
    with django_assert_num_queries(submit):
        response = client.post(url(campaign, criterion, Stage.LABEL, "submit"), data, **HTMX)
    assert shown_unit(response) is not None
    assert Label.objects.filter(criterion=criterion).count() == 40 - 2 + 1


def test_query_counts_of_a_label_answered_with_the_unit_after_the_one_on_screen(
    client, django_assert_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def prepare(size: int):
        campaign, criterion, units, annotator = campaign_of_size(size)
        for unit in units[3:]:
            label(member(campaign, Role.ANNOTATOR), criterion, Stage.LABEL, 1, unit=unit)
        client.force_login(annotator)
        page = client.get(url(campaign, criterion, Stage.LABEL))
        with CaptureQueriesContext(connection) as ahead:
            client.get(url(campaign, criterion, Stage.LABEL) + f"?after={shown_unit(page)}", **HTMX)
        # The page's GET of the unit after the one on screen: session, user, criterion with its
        # campaign and the role; savepoint, my lease (none), front of the queue held, lease
        # inserted, unit, release; sources; progress. Sent once when the page opens, no longer
        # after each label.
        assert len(ahead) == 3 + 6 + FRONT_HELD_APART + 2
        data = {"unit_id": shown_unit(page), "value": "1", "request_key": request_key(page)}
        return campaign, criterion, {**data, "shown": units[1].pk}

    campaign, criterion, data = prepare(4)
    with CaptureQueriesContext(connection) as captured:
        response = client.post(url(campaign, criterion, Stage.LABEL, "submit"), data, **HTMX)
    submit = len(captured)  # at once: the next request clears the connection's query log
    assert 'data-after="' in response.content.decode()
    # As the submit without ``shown`` (see above), and two more: the lease on the unit on screen
    # extended (its open slot held longer, then its row), then my lease after it (none) before
    # the front of the queue. A label used to cost that submit and the GET above.
    assert submit == 3 + 9 + 8 + FRONT_HELD_APART + 2

    campaign, criterion, data = prepare(40)
    with django_assert_num_queries(submit):
        response = client.post(url(campaign, criterion, Stage.LABEL, "submit"), data, **HTMX)
    assert shown_unit(response) is not None and 'data-after="' in response.content.decode()


# Progress of the whole campaign


def test_the_page_shows_the_progress_of_the_whole_criterion_every_stage_counted(
    client_for, annotator, reviewer, adjudicator, campaign, relevance
):
    criterion, units = relevance
    label(annotator, criterion, Stage.LABEL, 1, unit=units[0])
    label(reviewer, criterion, Stage.REVIEW, 1, unit=units[0])
    label(annotator, criterion, Stage.LABEL, 1, unit=units[1])
    label(reviewer, criterion, Stage.REVIEW, 0, unit=units[1], comment="non")
    client = client_for(annotator)
    page = client.get(url(campaign, criterion, Stage.LABEL)).content.decode()
    assert "campaign 1 / 3 final" in page
    label(adjudicator, criterion, Stage.ADJUDICATION, 0, unit=units[1], comment="hors sujet")
    assert (
        "campaign 2 / 3 final" in client.get(url(campaign, criterion, Stage.LABEL), **HTMX).content.decode()
    )


@pytest.mark.parametrize("second", [0, 1])
def test_blind_progress_counts_units_labelled_twice_whatever_the_values(client_for, campaign, second):
    campaign.annotation_mode = AnnotationMode.BLIND_DOUBLE
    campaign.save()
    criterion, units = sampled(campaign=campaign, answers=2)
    first_person, second_person = member(campaign, Role.ANNOTATOR), member(campaign, Role.ANNOTATOR)
    label(first_person, criterion, Stage.LABEL, 1, unit=units[0])
    label(second_person, criterion, Stage.LABEL, second, unit=units[0])
    page = client_for(second_person).get(url(campaign, criterion, Stage.LABEL)).content.decode()
    # The same figure whether the two agreed or not: it says nothing of the other label.
    assert "campaign 1 / 2 labelled twice" in page


# Guidelines versions


def _shown_version(response) -> str:
    return re.search(
        r'name="guidelines_version" value="(\d+)" form="decision"', response.content.decode()
    ).group(1)


def test_a_label_records_the_guidelines_version_its_author_was_shown(
    client_for, annotator, campaign, relevance
):
    criterion, units = relevance
    client = client_for(annotator)
    page = client.get(url(campaign, criterion, Stage.LABEL))
    shown = _shown_version(page)
    assert "version 1" in page.content.decode()
    # The guidelines are edited while the page is open: the label still rests on what was shown.
    criterion.guidelines = "New guidelines, written after the page was shown."
    criterion.save()
    client.post(
        url(campaign, criterion, Stage.LABEL, "submit"),
        {"unit_id": units[0].pk, "value": 1, "request_key": request_key(page), "guidelines_version": shown},
    )
    label = Label.objects.get()
    assert (label.guidelines_version_id, label.guidelines_version.number) == (int(shown), 1)
    again = client.get(url(campaign, criterion, Stage.LABEL))
    assert "New guidelines, written after the page was shown." in again.content.decode()
    assert "version 2" in again.content.decode()
    assert _shown_version(again) != shown


def test_a_label_without_a_version_records_the_current_one(client_for, annotator, campaign, relevance):
    criterion, units = relevance
    client_for(annotator).post(
        url(campaign, criterion, Stage.LABEL, "submit"), {"unit_id": units[0].pk, "value": 0}
    )
    assert Label.objects.get().guidelines_version.number == 1


def test_a_bad_guidelines_version_is_refused_and_changes_nothing(client_for, annotator, campaign, relevance):
    criterion, units = relevance
    client = client_for(annotator)
    other = Criterion.objects.get(campaign=campaign, name="veracity")
    from annotation.criteria.guidelines import current_version

    foreign = current_version(criterion=other)
    response = client.post(
        url(campaign, criterion, Stage.LABEL, "submit"),
        {"unit_id": units[0].pk, "value": 1, "guidelines_version": foreign.pk},
        **HTMX,
    )
    assert f"Guidelines version {foreign.pk} is not a version of relevance" in response.content.decode()
    response = client.post(
        url(campaign, criterion, Stage.LABEL, "submit"),
        {"unit_id": units[0].pk, "value": 1, "guidelines_version": "v1"},
    )
    assert response.status_code == 400
    assert b"guidelines_version must be a whole number" in response.content
    assert not Label.objects.exists()
