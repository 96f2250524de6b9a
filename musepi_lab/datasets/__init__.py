"""Datasets: the bundled generated sample, manifests, and discovery of session folders."""

from ._branches import generate_branch_session
from ._discover import discover_sessions
from ._generator import GeneratorConfig, generate_session, read_facts
from ._paths import corpus_path, find_up
from ._registry import (
    DATASETS_DIR,
    DatasetError,
    DatasetNotFound,
    iter_dataset_sessions,
    list_datasets,
)
from ._scale import write_scale_dataset

__all__ = [
    "DATASETS_DIR",
    "DatasetError",
    "DatasetNotFound",
    "GeneratorConfig",
    "corpus_path",
    "discover_sessions",
    "find_up",
    "generate_branch_session",
    "generate_session",
    "iter_dataset_sessions",
    "list_datasets",
    "read_facts",
    "write_scale_dataset",
]
