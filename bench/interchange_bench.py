"""Round-trip speed: a Label Studio file with labels and predictions on every sentence imported,
then the campaign exported to Label Studio, Argilla and Parquet.

    python bench/interchange_bench.py [--answers 2000] [--database attest_interchange_bench]

A throw-away database (see bench/pgdb.py) gets one campaign of ``--answers`` answers with three
sentences each; the file gives every sentence two human labels (two people) and a prediction.
Prints seconds and rows per second for each step, and checks that the Label Studio export
gives back every label of the file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.pgdb import bench_database


def build(*, answers: int):
    from annotation.corpus.campaigns import get_or_create_campaign
    from annotation.models import Answer, Level, Question, Sentence, Unit

    campaign, _ = get_or_create_campaign(name="Interchange bench")
    questions = Question.objects.bulk_create(
        Question(campaign=campaign, external_id=f"Q{i}", text=f"Question {i} ?", theme=f"T{i % 5}")
        for i in range(100)
    )
    made = Answer.objects.bulk_create(
        Answer(campaign=campaign, question=questions[i % 100], external_id=f"A{i}", text=f"Réponse {i}.")
        for i in range(answers)
    )
    sentences = Sentence.objects.bulk_create(
        Sentence(answer=answer, position=p, text=f"Phrase {p} de {answer.external_id}.")
        for answer in made
        for p in range(3)
    )
    Unit.objects.bulk_create(
        [Unit(campaign=campaign, level=Level.ANSWER, answer=a, theme=a.question.theme) for a in made]
        + [
            Unit(
                campaign=campaign,
                level=Level.SENTENCE,
                answer=s.answer,
                sentence=s,
                theme=s.answer.question.theme,
            )
            for s in sentences
        ]
    )
    return campaign


def label_studio_file(*, answers: int) -> list[dict]:
    start = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    tasks = []
    for i in range(answers):
        for p in range(3):
            n = i * 3 + p
            tasks.append(
                {
                    "data": {"answer_id": f"A{i}", "sentence": p},
                    "annotations": [
                        {
                            "completed_by": person,
                            "result": [
                                {
                                    "from_name": "veracity",
                                    "to_name": "text",
                                    "type": "choices",
                                    "value": {"choices": ["yes" if (n + person) % 4 else "no"]},
                                }
                            ],
                            "created_at": (start + dt.timedelta(seconds=n * 10 + person)).isoformat(),
                            "updated_at": (start + dt.timedelta(seconds=n * 10 + person + 5)).isoformat(),
                            "lead_time": 4.5 + person,
                        }
                        for person in (1, 2)
                    ],
                    "predictions": [
                        {
                            "model_version": "bench",
                            "score": 0.9,
                            "result": [
                                {
                                    "from_name": "veracity",
                                    "to_name": "text",
                                    "type": "choices",
                                    "value": {"choices": ["yes" if n % 5 else "no"]},
                                }
                            ],
                        }
                    ],
                }
            )
    return tasks


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", type=int, default=2000)
    parser.add_argument("--database", default="attest_interchange_bench")
    args = parser.parse_args()
    with bench_database(args.database) as engine:
        from annotation.models import Criterion
        from evaluation.interchange import exporting
        from evaluation.interchange.loading import import_labels

        campaign = build(answers=args.answers)
        tasks = label_studio_file(answers=args.answers)
        criteria = [Criterion.objects.get(campaign=campaign, name="veracity")]
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "tasks.json"
            path.write_text(json.dumps(tasks), encoding="utf-8")
            started = time.perf_counter()
            summary = import_labels(path=path, fmt="label-studio", campaign=campaign, judge_name="bench")
            seconds = time.perf_counter() - started
            print(
                f"{engine}: import {len(tasks)} tasks, {summary.labels} labels, "
                f"{summary.judgments} judgments: {seconds:.2f} s ({summary.labels / seconds:,.0f} labels/s)"
            )
            for fmt in ("label-studio", "argilla", "parquet"):
                started = time.perf_counter()
                if fmt == "parquet":
                    count = exporting.write_parquet(campaign=campaign, criteria=criteria, sink=io.BytesIO())
                    out = None
                else:
                    stream = io.StringIO()
                    write = exporting.write_label_studio if fmt == "label-studio" else exporting.write_argilla
                    count = write(campaign=campaign, criteria=criteria, stream=stream)
                    out = stream.getvalue()
                seconds = time.perf_counter() - started
                print(f"{engine}: export {fmt}: {count} items in {seconds:.2f} s ({count / seconds:,.0f}/s)")
                if fmt == "label-studio":
                    annotations = sum(len(task["annotations"]) for task in json.loads(out or "[]"))
                    assert annotations == summary.labels, (annotations, summary.labels)


if __name__ == "__main__":
    main()
