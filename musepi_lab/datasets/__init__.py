"""Datasets: the bundled generated sample, manifests, and discovery of session folders."""

from ..metrics._facts import FACT_KINDS
from ._branches import BranchSession, generate_branch_session
from ._discover import AGENTS, DiscoveredSession, discover_folder, discover_sessions
from ._generator import (
    SAMPLE_CONFIGS,
    GeneratorConfig,
    PlantedFact,
    generate_session,
    iter_sample_files,
    read_facts,
    write_sample,
)
from ._paths import corpus_path, find_up
from ._registry import (
    DATASETS_DIR,
    MANIFEST_SUFFIX,
    DatasetChecksumError,
    DatasetError,
    DatasetFile,
    DatasetManifest,
    DatasetNotFound,
    build_manifest,
    dataset_paths,
    file_sha256,
    is_manifest_file,
    iter_dataset_sessions,
    list_datasets,
    load_manifest,
    verify_file,
    write_manifest,
)

__all__ = [
    "AGENTS",
    "DATASETS_DIR",
    "FACT_KINDS",
    "MANIFEST_SUFFIX",
    "SAMPLE_CONFIGS",
    "BranchSession",
    "DatasetChecksumError",
    "DatasetError",
    "DatasetFile",
    "DatasetManifest",
    "DatasetNotFound",
    "DiscoveredSession",
    "GeneratorConfig",
    "PlantedFact",
    "build_manifest",
    "corpus_path",
    "dataset_paths",
    "discover_folder",
    "discover_sessions",
    "file_sha256",
    "find_up",
    "generate_branch_session",
    "generate_session",
    "is_manifest_file",
    "iter_dataset_sessions",
    "iter_sample_files",
    "list_datasets",
    "load_manifest",
    "read_facts",
    "verify_file",
    "write_manifest",
    "write_sample",
]
