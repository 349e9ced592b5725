"""Large campaigns for the benches, built inside the database in seconds.

    from bench.large_campaign import build_large
    built = build_large(units=50_000, judged=50_000, seed=42)

:func:`build_large` makes two versions of the assistant, as the demo does
(``evaluation.demo.campaign``): "Large bench v1" and, created after it with the same question ids,
"Large bench v2", so that the compare page compares them question by question and v2's report
finds v1 as its previous version. Each version has:

- 1,000 questions in five themes and four difficulties, each with gold evidence (two chunks'
  texts and ids: one that its answers with sources retrieve first, one they never retrieve),
  500 source chunks;
- ``units`` answers, each an answer-level unit; one answer in ten (at least 1,000, at most all)
  has two sentences (sentence-level units), the first citing one of the answer's three retrieved
  chunks (a citation-level unit);
- the built-in criteria relevance (answer), veracity (sentence) and citation_support
  (citation), and on v1 the five-category criterion correctness (answer, the demo's
  ``ANSWER_CORRECTNESS``);
- two judges: ``imported`` (kind imported: relevance and correctness on the first ``judged``
  answers) and ``lexical`` (kind lexical, with confidences: relevance on the first ``judged``
  answers, every sentence and citation unit);
- ``labels`` human labels per criterion on random judged units: a third imported, the rest
  labelled by annotator1..3 (a pace of 30 to 60 s a label, in sessions of 150 labels a day),
  reviewed by ``reviewer`` (a few overridden then adjudicated by ``adjudicator``), each with
  its ``created_at``; a done K-means sample per criterion holding the labelled units with their
  theme's inclusion probability;
- the people ``manager``, ``analyst``, ``annotator1..3``, ``reviewer``, ``adjudicator``
  (password ``bench``) as members, and the report snapshots of every criterion and judge
  (``evaluation.estimates.snapshots.record_snapshots``, as the demo stores them).

The bulk (questions, chunks, answers, sources, sentences, units, judgments, labels, sample items)
is ``INSERT ... SELECT`` over ``generate_series`` and ``random()`` seeded from ``seed``: PostgreSQL
only (``bench/report_bench.py`` and ``bench/pages_bench.py --size 50k|1m`` use it).
"""

from __future__ import annotations

from typing import Any

THEMES = ["Finance", "RH", "IT", "Juridique", "Immobilier"]
DIFFICULTIES = ["simple", "intermediate", "hard", "inappropriate"]
QUESTIONS = 1000
CHUNKS = 500
VERSIONS = ("Large bench v1", "Large bench v2")
# A version's rate of relevant answers per theme (v2 better on most themes, worse on IT).
RATES = (
    {"Finance": 0.80, "RH": 0.70, "IT": 0.75, "Juridique": 0.65, "Immobilier": 0.72},
    {"Finance": 0.84, "RH": 0.76, "IT": 0.62, "Juridique": 0.70, "Immobilier": 0.74},
)
PEOPLE = {
    "manager": ["manager"],
    "analyst": ["analyst"],
    "annotator1": ["annotator"],
    "annotator2": ["annotator"],
    "annotator3": ["annotator"],
    "reviewer": ["reviewer"],
    "adjudicator": ["adjudicator"],
}
PASSWORD = "bench"
BINARY_CRITERIA = ["relevance", "veracity", "citation_support"]
CORRECTNESS = "correctness"


def _case(column: str, mapping: dict[str, Any]) -> str:
    """A SQL CASE on ``column`` from ``mapping`` (constants written by this module only)."""
    whens = " ".join(f"WHEN '{key}' THEN {value}" for key, value in mapping.items())
    return f"CASE {column} {whens} END"


def _people() -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    User = get_user_model()
    users = {}
    for username in PEOPLE:
        user = User.objects.filter(username=username).first()
        if user is None:
            user = User.objects.create_user(username=username, password=PASSWORD)
        users[username] = user
    return users


def build_corpus(*, campaign, units: int, judged: int, rates: dict[str, float], cursor) -> dict[str, int]:
    """Questions, chunks, answers (``units``), their sources, sentences and units, and the
    relevance judgments of judges ``imported`` and ``lexical`` on the first ``judged`` answers;
    the veracity and citation_support judgments of ``lexical`` on every sentence and citation
    unit. Returns the judges' and criteria's ids by name."""
    from annotation.models import Criterion
    from evaluation.judge import runs
    from evaluation.judge.imported import imported_judge

    imported = imported_judge(campaign=campaign)
    lexical = runs.get_or_create_judge(campaign=campaign, name=runs.LEXICAL)
    criteria = dict(Criterion.objects.filter(campaign=campaign).values_list("name", "id"))
    detailed = min(units, max(1000, units // 10))
    p = {
        "c": campaign.pk,
        "n": units,
        "judged": min(judged, units),
        "every": max(1, units // detailed),
        "imported": imported.pk,
        "lexical": lexical.pk,
        "questions": QUESTIONS,
        "chunks": CHUNKS,
        **{f"crit_{name}": pk for name, pk in criteria.items()},
    }
    themes = "(ARRAY[" + ", ".join(f"'{t}'" for t in THEMES) + "])"
    difficulties = "(ARRAY[" + ", ".join(f"'{d}'" for d in DIFFICULTIES) + "])"
    cursor.execute(
        f"""INSERT INTO annotation_question
               (campaign_id, external_id, text, theme, difficulty, language, reference_answer, gold_evidence)
           SELECT %(c)s, 'Q' || lpad(i::text, 5, '0'), 'Question ' || i || ' ?',
                  {themes}[1 + i %% {len(THEMES)}],
                  {difficulties}[1 + (i / {len(THEMES)}) %% {len(DIFFICULTIES)}],
                  'fr', CASE WHEN i %% 4 = 0 THEN 'Réponse de référence ' || i ELSE '' END, '[]'
           FROM generate_series(0, %(questions)s - 1) AS i""",
        p,
    )
    cursor.execute(
        """INSERT INTO annotation_sourcechunk (campaign_id, external_id, title, page, text, text_hash)
           SELECT %(c)s, 'C' || lpad(i::text, 4, '0'), 'Document_' || (i / 20) || '.pdf', 1 + i %% 20,
                  'Passage ' || i || ' du document ' || (i / 20) || ' : comptes, contrats et baux.',
                  encode(sha256(('Passage ' || i)::bytea), 'hex')
           FROM generate_series(0, %(chunks)s - 1) AS i""",
        p,
    )
    cursor.execute("SELECT min(id) FROM annotation_question WHERE campaign_id = %(c)s", p)
    p["q0"] = cursor.fetchone()[0]
    cursor.execute("SELECT min(id) FROM annotation_sourcechunk WHERE campaign_id = %(c)s", p)
    p["k0"] = cursor.fetchone()[0]
    cursor.execute(
        """INSERT INTO annotation_answer (campaign_id, question_id, external_id, repetition, text, language)
           SELECT %(c)s, %(q0)s + (i %% %(questions)s), 'A' || i, 1 + i / %(questions)s,
                  'Réponse ' || i || '. Selon le document, le montant est stable [C'
                  || lpad(((i * 7) %% %(chunks)s)::text, 4, '0') || '].', 'fr'
           FROM generate_series(0, %(n)s - 1) AS i""",
        p,
    )
    cursor.execute("SELECT min(id) FROM annotation_answer WHERE campaign_id = %(c)s", p)
    p["a0"] = cursor.fetchone()[0]
    # Answers with sentences: every ``every``-th one; three retrieved chunks each, the first cited.
    cursor.execute(
        """INSERT INTO annotation_answersource (answer_id, chunk_id, rank)
           SELECT %(a0)s + i, %(k0)s + ((i * 7 + r * 13) %% %(chunks)s), r
           FROM generate_series(0, %(n)s - 1, %(every)s) AS i, generate_series(1, 3) AS r""",
        p,
    )
    cursor.execute(
        """INSERT INTO annotation_sentence
               (answer_id, position, text, paragraph, paragraph_index, cited_ids, citations_ok)
           SELECT %(a0)s + i, s,
                  CASE s WHEN 0 THEN 'Réponse ' || i || '. Selon le document, le montant est stable.'
                         ELSE 'Le reste est sans changement.' END,
                  '', 0,
                  CASE s WHEN 0 THEN jsonb_build_array
                         ('C' || lpad(((i * 7 + 13) %% %(chunks)s)::text, 4, '0'))
                         ELSE '[]'::jsonb END,
                  CASE s WHEN 0 THEN true END
           FROM generate_series(0, %(n)s - 1, %(every)s) AS i, generate_series(0, 1) AS s""",
        p,
    )
    cursor.execute(
        """INSERT INTO annotation_unit
               (campaign_id, level, answer_id, sentence_id, chunk_id, theme, difficulty)
           SELECT a.campaign_id, 'answer', a.id, NULL, NULL, q.theme, q.difficulty
           FROM annotation_answer a JOIN annotation_question q ON q.id = a.question_id
           WHERE a.campaign_id = %(c)s ORDER BY a.id""",
        p,
    )
    cursor.execute(
        """INSERT INTO annotation_unit
               (campaign_id, level, answer_id, sentence_id, chunk_id, theme, difficulty)
           SELECT a.campaign_id, 'sentence', a.id, s.id, NULL, q.theme, q.difficulty
           FROM annotation_sentence s JOIN annotation_answer a ON a.id = s.answer_id
           JOIN annotation_question q ON q.id = a.question_id
           WHERE a.campaign_id = %(c)s ORDER BY s.id""",
        p,
    )
    cursor.execute(
        """INSERT INTO annotation_unit
               (campaign_id, level, answer_id, sentence_id, chunk_id, theme, difficulty)
           SELECT a.campaign_id, 'citation', a.id, s.id, src.chunk_id, q.theme, q.difficulty
           FROM annotation_sentence s JOIN annotation_answer a ON a.id = s.answer_id
           JOIN annotation_question q ON q.id = a.question_id
           JOIN annotation_answersource src ON src.answer_id = a.id AND src.rank = 1
           WHERE a.campaign_id = %(c)s AND s.position = 0 ORDER BY s.id""",
        p,
    )
    rate = _case("u.theme", rates)
    judgment = """INSERT INTO evaluation_judgment
           (unit_id, criterion_id, judge_id, status, value, confidence, reasoning, raw_response, error,
            prompt_tokens, completion_tokens, cost, latency_ms, created_at, updated_at)"""
    # The imported judge's verdict: relevant with the theme's rate.
    cursor.execute(
        f"""{judgment}
           SELECT u.id, %(crit_relevance)s, %(imported)s, 'ok', (random() < {rate})::int, NULL, '', '', '',
                  0, 0, 0, 0, now(), now()
           FROM annotation_unit u WHERE u.campaign_id = %(c)s AND u.level = 'answer'
             AND u.answer_id < %(a0)s + %(judged)s""",
        p,
    )
    # The lexical judge: the imported verdict, wrong once in five, with a confidence.
    cursor.execute(
        f"""{judgment}
           SELECT j.unit_id, j.criterion_id, %(lexical)s, 'ok',
                  CASE WHEN random() < 0.2 THEN 1 - j.value ELSE j.value END,
                  0.5 + 0.5 * random(), '', '', '', 0, 0, 0, 0, now(), now()
           FROM evaluation_judgment j
           WHERE j.judge_id = %(imported)s AND j.criterion_id = %(crit_relevance)s""",
        p,
    )
    for name, level, share in (("veracity", "sentence", 0.85), ("citation_support", "citation", 0.78)):
        cursor.execute(
            f"""{judgment}
               SELECT u.id, %(crit_{name})s, %(lexical)s, 'ok', (random() < {share})::int,
                      0.5 + 0.5 * random(), '', '', '', 0, 0, 0, 0, now(), now()
               FROM annotation_unit u WHERE u.campaign_id = %(c)s AND u.level = '{level}'""",
            p,
        )
    return {"imported": imported.pk, "lexical": lexical.pk, **criteria}


def add_gold_evidence(*, campaign, cursor) -> None:
    """Every question's gold evidence (the evidence page's coverage and ranking): the texts and
    ids of two chunks, the first the one every answer to the question retrieves first, the
    second one it never retrieves (sources are ``(7 i + 13 r) mod CHUNKS`` for ranks 1 to 3)."""
    cursor.execute(
        """UPDATE annotation_question q
           SET gold_evidence = jsonb_build_array(
                   jsonb_build_object('text', c1.text, 'chunk_id', c1.external_id),
                   jsonb_build_object('text', c2.text, 'chunk_id', c2.external_id))
           FROM (SELECT id, substr(external_id, 2)::int AS n FROM annotation_question
                 WHERE campaign_id = %(c)s) AS numbered,
                annotation_sourcechunk c1, annotation_sourcechunk c2
           WHERE q.id = numbered.id AND c1.campaign_id = %(c)s AND c2.campaign_id = %(c)s
             AND c1.external_id = 'C' || lpad(((numbered.n * 7 + 13) %% %(chunks)s)::text, 4, '0')
             AND c2.external_id = 'C' || lpad(((numbered.n * 7 + 100) %% %(chunks)s)::text, 4, '0')""",
        {"c": campaign.pk, "chunks": CHUNKS},
    )


def add_correctness(*, campaign, judged: int, cursor) -> int:
    """The five-category criterion correctness (the demo's) with the imported judge's categories
    on the first ``judged`` answers; its id."""
    from annotation.corpus.conventions import ANSWER_CORRECTNESS
    from annotation.criteria.categories import CATEGORICAL
    from annotation.criteria.editing import CriterionDraft, save_criterion
    from annotation.models import Level
    from evaluation.judge.imported import imported_judge

    criterion, _version = save_criterion(
        campaign=campaign,
        draft=CriterionDraft(
            name=CORRECTNESS,
            title=ANSWER_CORRECTNESS["title"],
            level=Level.ANSWER,
            kind=CATEGORICAL,
            guidelines="Classez la réponse dans une des cinq catégories.",
            categories=[dict(item) for item in ANSWER_CORRECTNESS["categories"]],
            groups={name: list(values) for name, values in ANSWER_CORRECTNESS["groups"].items()},
        ),
    )
    judge = imported_judge(campaign=campaign)
    cursor.execute(
        """INSERT INTO evaluation_judgment
               (unit_id, criterion_id, judge_id, status, value, confidence, reasoning, raw_response, error,
                prompt_tokens, completion_tokens, cost, latency_ms, created_at, updated_at)
           SELECT u.id, %(crit)s, %(judge)s, 'ok',
                  CASE WHEN r < 0.55 THEN 5 WHEN r < 0.70 THEN 3 WHEN r < 0.82 THEN 2
                       WHEN r < 0.92 THEN 1 ELSE 4 END,
                  NULL, '', '', '', 0, 0, 0, 0, now(), now()
           FROM (SELECT u.id, random() AS r FROM annotation_unit u
                 WHERE u.campaign_id = %(c)s AND u.level = 'answer' ORDER BY u.id LIMIT %(judged)s) AS u""",
        {"c": campaign.pk, "crit": criterion.pk, "judge": judge.pk, "judged": judged},
    )
    return criterion.pk


def add_labels(
    *, criterion_id: int, judge_id: int, labels: int, users: dict[str, Any], flip: str, slot: int, cursor
) -> None:
    """``labels`` human labels on random units ``judge_id`` judged for ``criterion_id``: the
    judge's value, changed by the SQL expression ``flip`` of ``v`` once in ten; a third imported,
    the rest labelled by the three annotators in turn (30 to 60 s apart, 150 a day, the last days,
    from 8:00 plus 2 hours a ``slot``, so that two criteria's sessions do not
    overlap), then reviewed (one in twenty overridden, then adjudicated) within the slot; the last
    day is yesterday."""
    p = {
        "slot": f"{8 + 2 * slot} hours",
        "crit": criterion_id,
        "judge": judge_id,
        "labels": labels,
        "a1": users["annotator1"].pk,
        "a2": users["annotator2"].pk,
        "a3": users["annotator3"].pk,
        "reviewer": users["reviewer"].pk,
        "adjudicator": users["adjudicator"].pk,
    }
    cursor.execute("DROP TABLE IF EXISTS bench_chosen")
    cursor.execute(
        f"""CREATE TEMPORARY TABLE bench_chosen AS
           SELECT row_number() OVER () - 1 AS k, unit_id,
                  CASE WHEN random() < 0.1 THEN {flip.replace("v", "value")} ELSE value END AS value
           FROM (SELECT unit_id, value FROM evaluation_judgment
                 WHERE criterion_id = %(crit)s AND judge_id = %(judge)s AND status = 'ok'
                 ORDER BY random() LIMIT %(labels)s) AS picked""",
        p,
    )
    insert = """INSERT INTO annotation_label
           (unit_id, criterion_id, user_id, stage, value, comment, created_at)"""
    cursor.execute(
        f"""{insert}
           SELECT unit_id, %(crit)s, NULL, 'imported', value, '', now() - interval '30 days'
           FROM bench_chosen WHERE k %% 3 = 0""",
        p,
    )
    # People's labels: m-th of them (k without the imported third) by annotator m % 3, the
    # annotator's n-th label on day n / 150 (yesterday first) at 45 s +- 15 s a label.
    cursor.execute(
        f"""{insert}
           SELECT unit_id, %(crit)s, (ARRAY[%(a1)s, %(a2)s, %(a3)s])[1 + m %% 3], 'label', value, '',
                  date_trunc('day', now()) - interval '1 day' - ((n / 150) || ' days')::interval
                  + %(slot)s::interval + ((n %% 150) * 45 + (k * 7919) %% 30 - 15 || ' seconds')::interval
           FROM (SELECT *, k - k / 3 - 1 AS m, (k - k / 3 - 1) / 3 AS n
                 FROM bench_chosen WHERE k %% 3 <> 0) AS c""",
        p,
    )
    cursor.execute(
        f"""{insert}
           SELECT unit_id, %(crit)s, %(reviewer)s, 'review',
                  CASE WHEN k %% 20 = 1 THEN {flip.replace("v", "value")} ELSE value END, '',
                  date_trunc('day', now()) - interval '1 day' - ((k / 450) || ' days')::interval
                  + %(slot)s::interval + interval '60 minutes' + ((k %% 450) * 3 || ' seconds')::interval
           FROM bench_chosen WHERE k %% 3 <> 0""",
        p,
    )
    cursor.execute(
        f"""{insert}
           SELECT unit_id, %(crit)s, %(adjudicator)s, 'adjudication', value, '',
                  date_trunc('day', now()) - interval '1 day' - ((k / 450) || ' days')::interval
                  + %(slot)s::interval + interval '100 minutes' + ((k %% 450) * 2 || ' seconds')::interval
           FROM bench_chosen WHERE k %% 3 <> 0 AND k %% 20 = 1""",
        p,
    )
    # A done K-means sample holding the labelled units, at their theme's rate.
    cursor.execute(
        """WITH sample AS (
               INSERT INTO annotation_sample
                   (campaign_id, criterion_id, seed, budget, per_cluster, k_per_theme, embedding_backend,
                    design, design_parameters, status, progress, error, created_at, status_since)
               SELECT campaign_id, id, 7, %(labels)s, 3, '{}', 'tfidf', 'kmeans', '{}', 'done', 1.0, '',
                      now() - interval '31 days', now() - interval '31 days'
               FROM annotation_criterion WHERE id = %(crit)s RETURNING id, campaign_id),
           sizes AS (
               SELECT u.theme, count(*) AS n FROM annotation_unit u, annotation_criterion c
               WHERE c.id = %(crit)s AND u.campaign_id = c.campaign_id AND u.level = c.level
               GROUP BY u.theme),
           drawn AS (
               SELECT u.theme, b.unit_id, count(*) OVER (PARTITION BY u.theme) AS k,
                      row_number() OVER (PARTITION BY u.theme ORDER BY b.unit_id) AS r
               FROM bench_chosen b JOIN annotation_unit u ON u.id = b.unit_id)
           INSERT INTO annotation_sampleitem
               (sample_id, unit_id, theme, cluster, cluster_size, inclusion_probability, rank)
           SELECT sample.id, drawn.unit_id, drawn.theme, 0, sizes.n, drawn.k::float / sizes.n, drawn.r - 1
           FROM sample, drawn JOIN sizes ON sizes.theme = drawn.theme""",
        p,
    )
    cursor.execute("DROP TABLE bench_chosen")


def build_large(
    *,
    units: int = 50_000,
    judged: int | None = None,
    seed: int = 42,
    labels: int = 3000,
    versions: int = 2,
    snapshots: bool = True,
) -> dict:
    """Build the two versions (see the module docstring) in the current (PostgreSQL) database.

    ``units``: answers per version; ``judged``: the answers the judges judged (default: all);
    ``labels``: human labels per criterion and version; ``seed``: PostgreSQL's ``setseed``;
    ``versions``: 1 builds v1 only (then ``other`` is None); ``snapshots``: False stores none.

    Returns ``{"campaign": v1's slug, "other": v2's slug, "campaigns": [both slugs],
    "criteria": {slug: [criterion names]}, "binary": the binary criteria's names,
    "categorical": "correctness" (v1 only), "judges": ["imported", "lexical"],
    "manager": "manager", "annotators": [...], "units": units, "judged": judged,
    "labels": labels, "snapshots": how many report snapshots were stored}``.
    """
    from django.db import connection, transaction

    from annotation.corpus.campaigns import get_or_create_campaign
    from annotation.models import Criterion, Membership
    from evaluation.estimates.snapshots import record_snapshots
    from evaluation.models import ReportSnapshot

    if connection.vendor != "postgresql":
        raise RuntimeError("build_large needs PostgreSQL (INSERT ... SELECT over generate_series)")
    judged = units if judged is None else min(judged, units)
    slugs: list[str] = []
    criteria: dict[str, list[str]] = {}
    stored = 0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT setseed(%s)", [(seed % 1000) / 1000])
        users = _people()
        for index, name in enumerate(VERSIONS[:versions]):
            campaign, _ = get_or_create_campaign(name=name, expected_language="fr")
            for username, roles in PEOPLE.items():
                for role in roles:
                    Membership.objects.get_or_create(campaign=campaign, user=users[username], role=role)
            ids = build_corpus(
                campaign=campaign, units=units, judged=judged, rates=RATES[index], cursor=cursor
            )
            add_gold_evidence(campaign=campaign, cursor=cursor)
            if index == 0:
                ids[CORRECTNESS] = add_correctness(campaign=campaign, judged=judged, cursor=cursor)
            for slot, criterion in enumerate(BINARY_CRITERIA):
                judge = ids["imported"] if criterion == "relevance" else ids["lexical"]
                add_labels(
                    criterion_id=ids[criterion],
                    judge_id=judge,
                    labels=labels,
                    users=users,
                    flip="1 - v",
                    slot=slot,
                    cursor=cursor,
                )
            if CORRECTNESS in ids:
                add_labels(
                    criterion_id=ids[CORRECTNESS],
                    judge_id=ids["imported"],
                    labels=labels,
                    users=users,
                    flip="1 + v %% 5",
                    slot=len(BINARY_CRITERIA),
                    cursor=cursor,
                )
            slugs.append(campaign.slug)
            criteria[campaign.slug] = sorted(c for c in (*BINARY_CRITERIA, CORRECTNESS) if c in ids)
        cursor.execute("ANALYZE")
    for slug in slugs if snapshots else []:
        for criterion in (
            Criterion.objects.filter(campaign__slug=slug).select_related("campaign").order_by("name")
        ):
            stored += len(record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT))
    return {
        "campaign": slugs[0],
        "other": slugs[1] if len(slugs) > 1 else None,
        "campaigns": slugs,
        "criteria": criteria,
        "binary": list(BINARY_CRITERIA),
        "categorical": CORRECTNESS,
        "judges": ["imported", "lexical"],
        "manager": "manager",
        "annotators": ["annotator1", "annotator2", "annotator3", "reviewer", "adjudicator"],
        "units": units,
        "judged": judged,
        "labels": labels,
        "snapshots": stored,
    }
