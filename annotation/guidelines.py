"""The built-in criteria, the guidelines humans (and the judge) follow, and their versions."""

from __future__ import annotations

from typing import TypeGuard

from django.db import IntegrityError, transaction

from annotation.models import Criterion, CriterionVersion

GUIDELINES: dict[str, dict[str, str]] = {
    "veracity": {
        "fr": (
            "Véracité (au niveau de la phrase). Étiquette 1 : chaque information de la phrase se déduit "
            "des sources qu'elle cite. Étiquette 0 : au moins une information ne se déduit pas des sources "
            "citées (chiffre différent, fait absent, source qui dit autre chose, citation vers une source "
            "qui n'existe pas). Les phrases de politesse, de transition ou de remplissage sans information "
            "reçoivent 1. Les connaissances générales ne servent qu'à lever une ambiguïté, jamais à "
            "justifier une information absente des sources."
        ),
        "en": (
            "Veracity (sentence level). Label 1: every piece of information in the sentence can be deduced "
            "from the sources it cites. Label 0: at least one piece of information cannot be deduced from "
            "the cited sources (a different figure, a fact that is absent, a source that says something "
            "else, a citation to a source that does not exist). Politeness, transition or filler sentences "
            "without information get 1. World knowledge only serves to disambiguate, never to justify "
            "information the sources do not contain."
        ),
    },
    "relevance": {
        "fr": (
            "Pertinence (au niveau de la réponse). Étiquette 1 : la réponse répond à la question posée et "
            "ne contient aucun élément hors sujet. Étiquette 0 : la réponse contient au moins un élément "
            "hors sujet, ou ne répond pas à la question. La véracité n'est pas jugée ici : une réponse "
            "pertinente peut contenir une erreur factuelle."
        ),
        "en": (
            "Relevance (answer level). Label 1: the answer addresses the question asked and contains no "
            "off-topic element. Label 0: the answer contains at least one off-topic element, or does not "
            "address the question. Veracity is not judged here: a relevant answer may contain a factual "
            "error."
        ),
    },
}


def guidelines_for(*, criterion: str, language: str = "fr") -> str:
    """The built-in guidelines of ``criterion`` in ``language`` (French when unknown); '' if none."""
    texts = GUIDELINES.get(criterion, {})
    return texts.get(language) or texts.get("fr", "")


def _matches(version: CriterionVersion | None, criterion: Criterion) -> TypeGuard[CriterionVersion]:
    return (
        version is not None
        and version.guidelines == criterion.guidelines
        and version.judge_prompt == criterion.judge_prompt
    )


def current_version(*, criterion: Criterion) -> CriterionVersion:
    """The version of ``criterion``'s guidelines and judge prompt as they read now.

    The criterion's text fields are an editable draft (the admin, the shell, an import may change
    them); this is where an edit becomes a version. When the texts equal the version the criterion
    points to, that version is returned without a query (load ``current_version`` with
    ``select_related``); otherwise the next version is recorded from them and the criterion points
    to it. Versions are never changed afterwards. Safe when two requests see the same edit: the
    second finds the first one's version. ``criterion`` itself is not changed.
    """
    version = criterion.current_version if criterion.current_version_id else None
    if _matches(version, criterion):
        return version
    for _ in range(3):
        latest = CriterionVersion.objects.filter(criterion=criterion).order_by("-number").first()
        if _matches(latest, criterion):
            version = latest
        else:
            number = (latest.number if latest else 0) + 1
            try:
                with transaction.atomic():
                    version = CriterionVersion.objects.create(
                        criterion=criterion,
                        number=number,
                        guidelines=criterion.guidelines,
                        judge_prompt=criterion.judge_prompt,
                    )
            except IntegrityError:
                continue  # another request recorded this number first: read it again
        # The instance is left as it was read: were the enclosing transaction rolled back (a run
        # refused), a version cached on it would name a row that no longer exists.
        Criterion.objects.filter(pk=criterion.pk).update(current_version=version)
        return version
    raise RuntimeError(f"could not record a version of criterion {criterion.pk}")
