"""The settings' environment readers: strict values, and a local secret key made once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_float, env_int, env_secret_key, local_secret_key

ROOT = Path(__file__).resolve().parents[2]


def test_env_bool_reads_the_usual_spellings_and_refuses_anything_else(monkeypatch):
    monkeypatch.setenv("FLAG", "Yes")
    assert env_bool("FLAG") is True
    monkeypatch.setenv("FLAG", "off")
    assert env_bool("FLAG", True) is False
    monkeypatch.setenv("FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="FLAG='maybe'"):
        env_bool("FLAG")


def test_numbers_below_their_minimum_fail_loudly(monkeypatch):
    monkeypatch.setenv("N", "0")
    with pytest.raises(ImproperlyConfigured, match="N"):
        env_int("N", 5, minimum=1)
    monkeypatch.setenv("X", "abc")
    with pytest.raises(ImproperlyConfigured, match="X"):
        env_float("X", 1.0)


def test_local_secret_key_is_random_kept_and_private(tmp_path):
    path = tmp_path / "secret_key"
    first = local_secret_key(path)
    assert len(first) >= 50
    assert local_secret_key(path) == first
    assert path.stat().st_mode & 0o077 == 0
    assert local_secret_key(tmp_path / "other") != first


def test_a_damaged_secret_key_file_is_an_error_naming_it(tmp_path):
    path = tmp_path / "secret_key"
    path.write_text("short")
    with pytest.raises(ImproperlyConfigured, match="secret_key"):
        local_secret_key(path)


@pytest.mark.parametrize("value", ["change-me", "django-insecure-abc", "x" * 49])
def test_a_placeholder_or_short_secret_key_is_refused_naming_it(monkeypatch, value):
    monkeypatch.setenv("SECRET_KEY", value)
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY"):
        env_secret_key("SECRET_KEY")


def test_a_long_secret_key_is_kept_and_an_unset_one_is_empty(monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "k" * 50)
    assert env_secret_key("SECRET_KEY") == "k" * 50
    monkeypatch.delenv("SECRET_KEY")
    assert env_secret_key("SECRET_KEY") == ""


def test_the_app_does_not_start_with_the_example_secret_key(tmp_path):
    env = {**os.environ, "SECRET_KEY": "change-me", "VAR_DIR": str(tmp_path)}
    env.pop("DATABASE_URL", None)
    started = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert started.returncode != 0
    assert "SECRET_KEY is a placeholder" in started.stderr
