"""A criterion's held-out split is kept as it was made: the admin adds and edits none, and on
PostgreSQL a trigger refuses any UPDATE of it (evaluation/0013_held_out_split_kept)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from annotation.models import Criterion
from evaluation.designs import held_out
from evaluation.models import HeldOutSplit
from tests.annotation.workflow.test_append_only import needs_trigger
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_the_admin_neither_adds_nor_edits_a_split(campaign, client):
    split, _made = held_out.make_split(criterion=Criterion.objects.get(campaign=campaign, name="relevance"))
    client.force_login(make_user(superuser=True))
    assert client.get("/admin/evaluation/heldoutsplit/add/").status_code == 403
    change = client.post(f"/admin/evaluation/heldoutsplit/{split.pk}/change/", {"seed": "1"})
    assert change.status_code == 403
    assert HeldOutSplit.objects.get().seed == split.seed


@needs_trigger
def test_postgresql_refuses_to_change_a_split(campaign):
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    split, _made = held_out.make_split(criterion=criterion, seed=5)
    with pytest.raises(IntegrityError, match="held-out split is kept"), transaction.atomic():
        HeldOutSplit.objects.filter(pk=split.pk).update(seed=6)
    assert HeldOutSplit.objects.get().seed == 5
