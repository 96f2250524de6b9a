"""Manifest checks from issue 13: a NUL in a path is a `DatasetError`, and `size` is checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from musepi_lab.datasets._registry import (
    DatasetChecksumError,
    DatasetError,
    build_manifest,
    dataset_paths,
    load_manifest,
    write_manifest,
)

SESSION = b'{"type":"session","version":3,"id":"s"}\n'


@pytest.fixture
def registry(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "data"
    data.mkdir()
    (data / "s.jsonl").write_bytes(SESSION)
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    manifest = build_manifest(
        name="tiny",
        root=data,
        manifest_dir=manifests,
        files=[("s.jsonl", "session")],
        description="one file",
        source="test",
        licence="MIT",
        format="pi",
    )
    write_manifest(manifest, manifests / "tiny.manifest.json")
    return manifests, data


def _edit(manifests: Path, change) -> None:
    path = manifests / "tiny.manifest.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    change(raw)
    path.write_text(json.dumps(raw), encoding="utf-8")


@pytest.mark.parametrize("field", ["path", "root"])
def test_nul_in_a_manifest_path_is_a_dataset_error(registry, field: str) -> None:
    manifests, _ = registry

    def put_nul(raw: dict) -> None:
        if field == "path":
            raw["files"][0]["path"] = "s\x00.jsonl"
        else:
            raw["root"] = "../da\x00ta"

    _edit(manifests, put_nul)
    with pytest.raises(DatasetError, match="NUL"):
        dataset_paths("tiny", folder=manifests)


def test_nul_in_the_manifest_name_is_a_dataset_error(registry) -> None:
    manifests, _ = registry
    with pytest.raises(DatasetError):
        load_manifest("ti\x00ny.json", folder=manifests)


def test_size_that_disagrees_with_the_file_is_refused(registry) -> None:
    manifests, data = registry
    _edit(manifests, lambda raw: raw["files"][0].update(size=len(SESSION) + 1))
    with pytest.raises(DatasetChecksumError, match=r"s\.jsonl: size mismatch.*says 41.*has 40"):
        dataset_paths("tiny", folder=manifests)
    assert dataset_paths("tiny", folder=manifests, verify=False) == [data / "s.jsonl"]
