"""Datasets: the bundled generated sample, manifests, and discovery of session folders."""

from ._generator import (
    FACT_KINDS,
    SAMPLE_CONFIGS,
    GeneratorConfig,
    PlantedFact,
    generate_session,
    iter_sample_files,
    read_facts,
    write_sample,
)

__all__ = [
    "FACT_KINDS",
    "SAMPLE_CONFIGS",
    "GeneratorConfig",
    "PlantedFact",
    "generate_session",
    "iter_sample_files",
    "read_facts",
    "write_sample",
]
