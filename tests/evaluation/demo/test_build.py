"""The demo builder (demo/build.py): its material gives exactly the committed demo file, and its
check holds the planted defects to the app's own conventions."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from demo import build, checks, material
from evaluation.demo.campaign import DEMO_FILE

ROOT = Path(__file__).resolve().parents[3]


def test_the_builder_run_as_a_script_rewrites_the_committed_demo_file_byte_for_byte(tmp_path):
    # Run the way `make demo-file` runs it, without Django's settings, into a copy.
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    output = tmp_path / "campaign.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "demo.build", "--output", str(output)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "120 answers to 20 questions, 74 distinct chunks" in done.stdout
    assert output.read_bytes() == DEMO_FILE.read_bytes()


def test_the_demo_file_the_app_loads_is_the_builder_s():
    assert DEMO_FILE == build.OUTPUT


def test_check_mode_refuses_a_file_that_differs_from_the_material(tmp_path, capsys):
    stale = tmp_path / "campaign.jsonl"
    stale.write_bytes(DEMO_FILE.read_bytes().replace(b"148,6", b"148,7", 1))
    assert build.main(["--check", "--output", str(stale)]) == 1
    assert "is not what the material gives" in capsys.readouterr().err
    assert build.main(["--check", "--output", str(DEMO_FILE)]) == 0


def test_the_check_flags_an_answer_the_app_would_read_as_an_abstention():
    records = build.build_campaign()
    assert checks.check_campaign(records=records)
    first = records[0]
    first["answer"] = "Je ne trouve pas le chiffre d'affaires. " + first["answer"]
    with pytest.raises(ValueError, match=r"abstentions: unexpected \['Q-FIN-01-r1'\]"):
        checks.check_campaign(records=records)


def test_the_chunks_file_round_trips_every_chunk_with_its_theme_title_and_page():
    by_key = material.CHUNKS_BY_KEY
    assert len(by_key) == 74
    chunk = by_key["fin_cr_conso"]
    assert (chunk.theme, chunk.title, chunk.page) == (
        "Finance",
        "02_Finance/Comptes_consolides_2023.pdf",
        4,
    )
    assert chunk.text.startswith("Compte de résultat consolidé (en millions d'euros) – exercice clos")
    assert "\n" not in chunk.text and "  " not in chunk.text
    assert {c.theme for c in material.CHUNKS} == set(material.THEMES)
