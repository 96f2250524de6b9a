"""The slow tests are marked `slow` (deselect with `-m "not slow"`) and still run by default."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Over ten seconds each on the two-core machine (`pytest --durations`), at the time marked.
SLOW = {
    "tests/test_probes.py": (
        "test_every_strategy_gets_a_score_table_row",
        "test_none_keeps_every_exact_reference",
        "test_truncate_at_the_smallest_budget_scores_what_is_left",
        "test_pi_fixture_score_table",
    ),
    "tests/test_readme.py": (
        "test_readme_examples_run_and_print_what_the_readme_says",
        "test_whole_examples_run_as_scripts",
    ),
    "tests/test_bench_dask.py": (
        "test_dask_frame_equals_the_serial_frame_and_streams_one_part_per_session",
        "test_a_killed_client_resumes_from_its_parts_and_a_second_run_is_refused",
        "test_cli_bench_on_dask_and_report",
    ),
    "tests/test_bench_files.py": ("test_kill_9_during_a_write_keeps_the_earlier_results",),
    "tests/test_strategy_baselines.py": ("test_hybrid_with_llm_summary_over_the_loopback_server",),
    "tests/conformance/test_unicode.py": (
        "test_the_release_and_ours_agree_on_every_code_point_and_font",
        "test_every_scalar_value_of_planes_0_to_2_is_probed_alone_and_in_every_template",
        "test_a_difference_is_counted_and_named",
    ),
    "tests/conformance/test_reference_driver.py": (
        "test_context_roles",
        "test_entries_and_estimates_match_the_raw_file",
    ),
    "tests/test_notebook_papermill.py": ("test_benchmark_notebook_with_injected_parameters",),
    "tests/test_notebook_probes.py": ("test_probe_notebook_uses_the_endpoints_it_is_given",),
    "tests/test_wheel.py": (
        "test_wheel_holds_the_prompts_and_the_sample",
        "test_demo_runs_from_the_installed_wheel_in_an_empty_folder",
    ),
}


def _marked_slow(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module_slow = any(
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
        and "slow" in ast.unparse(node.value)
        for node in tree.body
    )
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and (module_slow or any("mark.slow" in ast.unparse(d) for d in node.decorator_list))
    }


def test_the_marker_is_registered_and_not_deselected_by_default() -> None:
    options = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert any(m.startswith("slow:") for m in options["markers"])
    assert "not slow" not in options.get("addopts", "")


@pytest.mark.parametrize("path", sorted(SLOW))
def test_the_slow_tests_are_marked(path: str) -> None:
    missing = set(SLOW[path]) - _marked_slow(REPO / path)
    assert not missing, f"{path}: not marked slow: {sorted(missing)}"
