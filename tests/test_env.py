"""The settings' environment readers: strict values, and a local secret key made once."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_float, env_int, local_secret_key


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
