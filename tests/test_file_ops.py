"""File-operation tracking and formatting (spec §5.5–5.6, seed `<files>` example)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from musepi_lab.compaction._file_ops import (
    FileOperations,
    compute_file_lists,
    extract_file_ops,
    file_ops_from_messages,
    format_file_operations,
    format_files_block,
    format_grouped_paths,
    is_url_scheme_path,
    seed_from_details,
    seed_from_entry,
    split_read_selector,
    strip_read_selector,
    upsert_file_operations,
)
from musepi_lab.session._model import Entry

SEED = Path(__file__).resolve().parents[1].parent / "shared" / "seed" / "000_b8b2501f6ea5290b.txt"


def call(name: str, **args: object) -> dict:
    return {"type": "toolCall", "id": f"c-{name}-{len(args)}", "name": name, "arguments": args}


def assistant(*blocks: dict) -> dict:
    return {"role": "assistant", "content": list(blocks)}


# -- extraction ----------------------------------------------------------------------------


def test_pi_extracts_read_write_edit_by_exact_name() -> None:
    msg = assistant(
        {"type": "text", "text": "working"},
        call("read", path="src/a.ts"),
        call("write", path="src/b.ts", content="x"),
        call("edit", path="src/c.ts", oldText="a", newText="b"),
        call("Read", path="src/ignored-case.ts"),
        call("bash", command="cat src/d.ts", path="src/d.ts"),
        call("read", path=""),
        call("read", path=42),
        call("read"),
    )
    ops = extract_file_ops(msg, profile="pi")
    assert ops.read == {"src/a.ts"}
    assert ops.written == {"src/b.ts"}
    assert ops.edited == {"src/c.ts"}


def test_only_assistant_messages_count() -> None:
    user = {"role": "user", "content": [call("read", path="x.ts")]}
    result = {"role": "toolResult", "content": [call("read", path="x.ts")]}
    assert not extract_file_ops(user)
    assert not extract_file_ops(result)
    assert not extract_file_ops({"role": "assistant", "content": "read x.ts"})


def test_pi_keeps_selectors_and_urls_verbatim() -> None:
    msg = assistant(call("read", path="src/a.ts:50-200"), call("read", path="artifact://3"))
    assert extract_file_ops(msg, profile="pi").read == {"src/a.ts:50-200", "artifact://3"}


def test_musepi_strips_read_selectors_and_skips_urls() -> None:
    msg = assistant(
        call("read", path="src/a.ts:50-200"),
        call("read", path="src/a.ts:raw"),
        call("read", path="artifact://3"),
        call("read", path="https://example.com/x.md"),
        call("edit", path="file.ts:conflict://1"),
        call("write", path="local://ctx.md"),
        call("write", path="out/b.ts:10"),
    )
    ops = extract_file_ops(msg, profile="musepi")
    assert ops.read == {"src/a.ts"}
    assert ops.edited == frozenset()
    # Only read paths carry selectors; a write path is taken as written.
    assert ops.written == {"out/b.ts:10"}


def test_unknown_profile_is_an_error() -> None:
    with pytest.raises(ValueError, match="profile"):
        extract_file_ops(assistant(), profile="claude")


def test_file_ops_from_messages_adds_to_seed_without_changing_it() -> None:
    seed = FileOperations(read=frozenset({"old.md"}))
    msgs = [assistant(call("read", path="a.ts")), assistant(call("edit", path="a.ts"))]
    ops = file_ops_from_messages(msgs, seed=seed)
    assert ops.read == {"old.md", "a.ts"}
    assert ops.edited == {"a.ts"}
    assert seed.read == {"old.md"}


def test_file_operations_is_immutable_and_merges() -> None:
    a = FileOperations(read=frozenset({"x"}))
    b = FileOperations(written=frozenset({"y"}), edited=frozenset({"z"}))
    merged = a.merge(b)
    assert (merged.read, merged.written, merged.edited) == ({"x"}, {"y"}, {"z"})
    assert merged.modified == {"y", "z"}
    assert not FileOperations.empty()
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.read = frozenset()  # type: ignore[misc]


# -- selectors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "selector",
    [
        "50",
        "50-200",
        "50+10",
        "L5-L16",
        "l5-l16",
        "L5",
        "5-16,960-973",
        "5..16",
        "L5..L16",
        "5..",
        "50-",
        "1-5,9-",
        "raw",
        "RAW",
        "conflicts",
        "Conflicts",
        "1-50:raw",
        "raw:1-50",
        "Raw:L1-L9",
    ],
)
def test_strip_read_selector_removes_every_selector_form(selector: str) -> None:
    assert strip_read_selector(f"src/mod.py:{selector}") == "src/mod.py"
    assert split_read_selector(f"src/mod.py:{selector}") == ("src/mod.py", selector)


@pytest.mark.parametrize(
    "path",
    [
        "src/mod.py",
        "notes:draft",
        "src/mod.py:5-x",
        "src/mod.py:-5",
        "src/mod.py:",
        ":50",
        "C:\\work\\a.py",
        "src/mod.py:5 ",
    ],
)
def test_strip_read_selector_leaves_non_selectors(path: str) -> None:
    assert strip_read_selector(path) == path
    assert split_read_selector(path) == (path, None)


def test_only_raw_and_range_pairs_form_a_compound_selector() -> None:
    assert split_read_selector("a.py:raw:raw") == ("a.py:raw", "raw")
    assert split_read_selector("a.py:conflicts:5") == ("a.py:conflicts", "5")
    assert split_read_selector("a.py:10:20") == ("a.py:10", "20")
    assert split_read_selector("C:raw:5") == ("C", "raw:5")


def test_url_scheme_detection() -> None:
    for path in (
        "artifact://3",
        "conflict://1",
        "history://x",
        "https://a.b/c",
        "x.ts:conflict://1",
    ):
        assert is_url_scheme_path(path)
    for path in ("src/a.ts", "C:/x/y", "a:b/c", "//server/share"):
        assert not is_url_scheme_path(path)


# -- lists ---------------------------------------------------------------------------------


def test_compute_file_lists_modified_wins_over_read() -> None:
    ops = FileOperations(
        read=frozenset({"b.ts", "a.ts", "c.ts"}),
        written=frozenset({"c.ts", "z.ts"}),
        edited=frozenset({"a.ts"}),
    )
    assert compute_file_lists(ops) == (["b.ts"], ["a.ts", "c.ts", "z.ts"])


def test_compute_file_lists_sorts_by_utf16_code_units() -> None:
    # U+1F600 is the surrogate pair D83D DE00, below U+FF21 in UTF-16 (JS sort order),
    # though above it as a code point (Python's default order).
    emoji, fullwidth = "\U0001f600.txt", "\uff21.txt"
    ops = FileOperations(read=frozenset({fullwidth, emoji, "a.txt"}))
    read, _ = compute_file_lists(ops)
    assert read == ["a.txt", emoji, fullwidth]
    assert sorted(read) != read


def test_musepi_compute_file_lists_drops_urls_from_seeded_details() -> None:
    ops = FileOperations(
        read=frozenset({"artifact://1", "a.ts"}), edited=frozenset({"conflict://2"})
    )
    assert compute_file_lists(ops, profile="musepi") == (["a.ts"], [])
    assert compute_file_lists(ops, profile="pi") == (["a.ts", "artifact://1"], ["conflict://2"])


def test_seed_from_details_per_profile() -> None:
    details = {"readFiles": ["a.ts:10-20", 7, "b.ts"], "modifiedFiles": ["c.ts"]}
    pi = seed_from_details(details, profile="pi")
    assert pi.read == {"a.ts:10-20", "b.ts"}
    assert pi.edited == {"c.ts"}
    assert pi.written == frozenset()
    assert seed_from_details(details, profile="musepi").read == {"a.ts", "b.ts"}
    assert not seed_from_details({"readFiles": "a.ts"}, profile="pi")
    assert not seed_from_details(None, profile="pi")


def test_seed_from_entry_ignores_extension_summaries() -> None:
    details = {"readFiles": ["a.ts"], "modifiedFiles": []}
    base = {"type": "compaction", "id": "c1", "parentId": None, "details": details}
    assert seed_from_entry(Entry.from_record(base), profile="pi").read == {"a.ts"}
    hook = Entry.from_record({**base, "fromHook": True})
    ext = Entry.from_record({**base, "fromExtension": True})
    assert not seed_from_entry(hook, profile="pi")
    assert not seed_from_entry(hook, profile="musepi")
    assert not seed_from_entry(ext, profile="musepi")
    # pi knows only `fromHook`.
    assert seed_from_entry(ext, profile="pi").read == {"a.ts"}


# -- pi format -----------------------------------------------------------------------------


def test_pi_format_file_operations_exact() -> None:
    assert format_file_operations(["a.ts", "b.ts"], ["c.ts"]) == (
        "\n\n<read-files>\na.ts\nb.ts\n</read-files>\n\n<modified-files>\nc.ts\n</modified-files>"
    )
    assert format_file_operations([], ["c.ts"]) == "\n\n<modified-files>\nc.ts\n</modified-files>"
    assert format_file_operations(["a.ts"], []) == "\n\n<read-files>\na.ts\n</read-files>"
    assert format_file_operations([], []) == ""


# -- musepi grouped tree -------------------------------------------------------------------


def seed_files_block() -> str:
    if not SEED.exists():
        pytest.skip(f"seed not found: {SEED}")
    match = re.search(r"<files>\n.*?\n</files>", SEED.read_text(encoding="utf-8"), re.DOTALL)
    assert match is not None, "the seed carries an example <files> block"
    return match.group(0)


def test_files_block_reproduces_the_seed_example() -> None:
    expected = seed_files_block()
    base = "packages/agent/src/compaction/"
    msgs = [
        assistant(
            call("read", path=base + "compaction.ts"), call("read", path=base + "utils.ts:1-80")
        ),
        assistant(call("edit", path=base + "utils.ts")),
        assistant(call("write", path=base + "prompts/file-operations.md")),
    ]
    ops = file_ops_from_messages(msgs, profile="musepi")
    read, modified = compute_file_lists(ops, profile="musepi")
    assert format_files_block(read, modified, read_set=ops.read) == expected


def test_grouped_paths_folds_single_child_chains_and_nests_headers() -> None:
    paths = ["a/b/c/x.ts", "a/b/c/d/y.ts", "a/b/c/d/e/z.ts", "a/q.ts", "top.ts"]
    assert format_grouped_paths(paths) == "\n".join(
        ["top.ts", "# a/", "q.ts", "## b/c/", "x.ts", "### d/", "y.ts", "#### e/", "z.ts"]
    )


def test_grouped_paths_absolute_paths_share_a_slash_root() -> None:
    assert format_grouped_paths(["/x/y/z.ts"]) == "# /x/y/\nz.ts"
    assert format_grouped_paths(["/x/y/z.ts", "/x/w.ts"]) == "# /x/\nw.ts\n## y/\nz.ts"


def test_grouped_paths_backslashes_urls_dirs_duplicates_and_order() -> None:
    paths = ["src\\win\\a.ts", "https://ex.com/doc", "src/win/a.ts", "build/", "src/win/b.ts"]
    seen: list[str] = []

    def annotate(path: str) -> str:
        seen.append(path)
        return " *"

    out = format_grouped_paths(paths, annotate)
    assert out == "https://ex.com/doc *\n# src/win/\na.ts *\nb.ts *\n# build/"
    # The annotation sees the path as given (the first of two duplicates).
    assert seen == ["https://ex.com/doc", "src\\win\\a.ts", "src/win/b.ts"]
    assert format_grouped_paths([]) == ""
    # Only a written trailing `/` makes a directory leaf; a trailing backslash is trimmed.
    assert format_grouped_paths(["out\\"]) == "out"


def test_files_block_markers() -> None:
    block = format_files_block(["r.ts"], ["rw.ts", "w.ts"], read_set={"rw.ts", "r.ts"})
    assert block == "<files>\nr.ts (Read)\nrw.ts (RW)\nw.ts (Write)\n</files>"
    assert format_files_block(["r.ts"], ["w.ts"]) == "<files>\nr.ts (Read)\nw.ts (Write)\n</files>"
    assert format_files_block([], []) == ""


def test_files_block_caps_at_twenty_with_elision_line() -> None:
    read = [f"src/f{i:02d}.ts" for i in range(25)]
    block = format_files_block(read, [])
    lines = block.split("\n")
    assert lines[0] == "<files>" and lines[-1] == "</files>"
    assert lines[1] == "# src/"
    assert lines[2:22] == [f"f{i:02d}.ts (Read)" for i in range(20)]
    assert lines[22] == "[\u20265 files elided\u2026]"
    assert len(lines) == 24


def test_upsert_replaces_every_old_block() -> None:
    old = (
        "## Goal\nShip it.\n\n<read-files>\nold.ts\n</read-files>\n\n"
        "<modified-files>\nold2.ts\n</modified-files>\n\n<files>\nstale.ts (Read)\n</files>\n  \n"
    )
    out = upsert_file_operations(old, ["new.ts"], [])
    assert out == "## Goal\nShip it.\n\n<files>\nnew.ts (Read)\n</files>"
    assert upsert_file_operations(out, ["new.ts"], []) == out
    assert upsert_file_operations("", ["a.ts"], []) == "<files>\na.ts (Read)\n</files>"
    assert upsert_file_operations(old, [], []) == "## Goal\nShip it."
