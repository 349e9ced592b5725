"""The browser tests' campaign: a due diligence on Velmont, four answers with their sources, sampled
for veracity, and an annotator, a reviewer and an adjudicator."""

from __future__ import annotations

from annotation.corpus.campaigns import get_or_create_campaign
from annotation.models import (
    Answer,
    AnswerSource,
    Criterion,
    Level,
    Question,
    Role,
    Sentence,
    SourceChunk,
    Unit,
)
from tests.factories import add_member, make_user, sample_units

CHUNKS = {
    "4ca822": (
        "Rapport annuel 2023 - Velmont SA.pdf",
        12,
        "Le chiffre d'affaires consolidé de l'exercice 2023 s'établit à 48,2 millions d'euros, en hausse "
        "de 7,9 % par rapport à 2022 (44,7 millions d'euros). La croissance provient principalement de "
        "l'activité de maintenance industrielle, qui représente désormais 61 % du chiffre d'affaires.\n\n"
        "L'excédent brut d'exploitation atteint 6,1 millions d'euros, soit une marge de 12,7 %.",
    ),
    "9be013": (
        "Contrat de crédit syndiqué - avenant n°2.pdf",
        3,
        "L'emprunteur s'engage à maintenir un ratio de levier (dette financière nette / EBE) inférieur à "
        "3,0x à chaque date de test semestrielle. Le non-respect de ce ratio constitue un cas de défaut "
        "au sens de l'article 22.",
    ),
    "c7f5d1": (
        "Procès-verbal du conseil d'administration du 14 mars 2024.docx",
        2,
        "Le conseil prend acte du départ du directeur financier au 30 juin 2024. Un processus de "
        "recrutement est engagé avec l'assistance d'un cabinet spécialisé.",
    ),
    "e12aa0": (
        "Registre du personnel - extrait 2023.xlsx",
        None,
        "Effectif au 31/12/2023 : 312 salariés, dont 287 en CDI. Taux de rotation annuel : 9,4 %.",
    ),
}

ANSWERS = [
    (
        "Quel est le chiffre d'affaires de Velmont en 2023 et comment évolue-t-il ?",
        "Finance",
        [
            ("Le chiffre d'affaires consolidé 2023 s'élève à **48,2 M€** [^4ca822^].", ["4ca822"]),
            (
                "Il progresse de 7,9 % par rapport à 2022, porté par la maintenance industrielle [^4ca822^].",
                ["4ca822"],
            ),
            (
                "La marge d'EBE atteint 15 %, ce qui place Velmont au-dessus de son secteur [^4ca822^].",
                ["4ca822"],
            ),
        ],
        ["4ca822", "9be013", "c7f5d1"],
    ),
    (
        "Existe-t-il des covenants financiers dans la documentation de crédit ?",
        "Finance",
        [
            (
                "Oui, le contrat de crédit syndiqué prévoit un ratio de levier maximal de 3,0x [^9be013^].",
                ["9be013"],
            ),
            ("Ce ratio est testé chaque semestre [^9be013^].", ["9be013"]),
            (
                "Un bris de covenant entraînerait une renégociation automatique des marges [^7f00aa^].",
                ["7f00aa"],
            ),
        ],
        ["9be013", "4ca822"],
    ),
    (
        "Des changements sont-ils prévus au sein de l'équipe de direction ?",
        "Gouvernance",
        [
            ("Le directeur financier quittera ses fonctions le 30 juin 2024 [^c7f5d1^].", ["c7f5d1"]),
            ("Un cabinet de recrutement accompagne la recherche de son successeur [^c7f5d1^].", ["c7f5d1"]),
            ("N'hésitez pas à me solliciter pour toute précision complémentaire.", []),
        ],
        ["c7f5d1", "4ca822"],
    ),
    (
        "Quel est l'effectif de la société ?",
        "RH",
        [
            ("Velmont emploie 312 salariés au 31 décembre 2023 [^e12aa0^].", ["e12aa0"]),
            ("La grande majorité, soit 287 personnes, est en CDI [^e12aa0^].", ["e12aa0"]),
            ("Le taux de rotation s'élève à 9,4 % sur l'année [^e12aa0^].", ["e12aa0"]),
        ],
        ["e12aa0", "c7f5d1"],
    ),
]


def velmont_campaign():
    campaign, _ = get_or_create_campaign(name="Velmont due diligence (e2e)")
    chunks = {
        cid: SourceChunk.objects.create(campaign=campaign, external_id=cid, title=title, page=page, text=text)
        for cid, (title, page, text) in CHUNKS.items()
    }
    units = []
    for n, (question_text, theme, sentences, retrieved) in enumerate(ANSWERS, start=1):
        question = Question.objects.create(
            campaign=campaign, external_id=f"Q{n}", text=question_text, theme=theme, difficulty="simple"
        )
        paragraph = " ".join(text for text, _ in sentences)
        answer = Answer.objects.create(
            campaign=campaign, question=question, external_id=f"Q{n}-R01", text=paragraph, language="fr"
        )
        for rank, cid in enumerate(retrieved, start=1):
            AnswerSource.objects.create(answer=answer, chunk=chunks[cid], rank=rank)
        Unit.objects.create(
            campaign=campaign, level=Level.ANSWER, answer=answer, theme=theme, difficulty="simple"
        )
        for position, (text, cited) in enumerate(sentences):
            sentence = Sentence.objects.create(
                answer=answer,
                position=position,
                text=text,
                paragraph=paragraph,
                cited_ids=cited,
                citations_ok=all(c in retrieved for c in cited) if cited else None,
            )
            units.append(
                Unit.objects.create(
                    campaign=campaign,
                    level=Level.SENTENCE,
                    answer=answer,
                    sentence=sentence,
                    theme=theme,
                    difficulty="simple",
                )
            )
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="veracity")
    sample_units(criterion=criterion, units=units)
    people = {}
    for username, role in (("claire", Role.ANNOTATOR), ("marc", Role.REVIEWER), ("sophie", Role.ADJUDICATOR)):
        people[username] = make_user(username=username)
        add_member(campaign=campaign, user=people[username], roles=[role])
    return campaign, criterion, units, people
