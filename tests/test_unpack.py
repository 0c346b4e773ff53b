"""The Milvus server's binaries are unpacked once per wheel version, into the user's cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from nomnesia.adapters.engines import _unpack


class FakeWheel:
    """Stands for the ``milvus`` package: records where it was asked to unpack."""

    def __init__(self) -> None:
        self.into: list[Path] = []

    def _initialize_data_files(self, base: str) -> None:
        self.into.append(Path(base))
        (Path(base) / "bin").mkdir(parents=True, exist_ok=True)


def test_binaries_go_to_one_cache_directory_per_wheel_version(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(_unpack, "version", lambda name: "2.3.5")
    wheel = FakeWheel()
    first = _unpack.milvus_binaries(wheel, tmp_path / "provider-a")
    second = _unpack.milvus_binaries(wheel, tmp_path / "provider-b")
    assert first == second == tmp_path / "cache" / "nomnesia" / "milvus-server-2.3.5" / "bin"
    assert not (tmp_path / "provider-a").exists()  # nothing unpacked per provider


def test_an_unwritable_cache_falls_back_to_the_providers_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the cache would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    wheel = FakeWheel()
    assert _unpack.milvus_binaries(wheel, tmp_path / "provider") == tmp_path / "provider" / "bin"
    assert wheel.into == [tmp_path / "provider"]
