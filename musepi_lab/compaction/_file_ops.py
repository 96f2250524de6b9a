"""File-operation tracking for compaction and branch summaries (spec §5.5–5.6).

Two profiles:

- `pi`: read/write/edit tool calls with a string `path` fill three sets; the summary gets
  two tags, `<read-files>` and `<modified-files>` (spec §5.5).
- `musepi` (oh-my-pi / MusePi): read paths lose their trailing read-tool selector
  (`src/a.ts:50-200` → `src/a.ts`), `scheme://` paths are left out, and the summary gets one
  `<files>` block: a grouped, prefix-folded directory tree with a `(Read)`, `(Write)` or
  `(RW)` marker per file, capped at 20 files (spec §5.6).

Everything here is pure: `FileOperations` is an immutable value and every function returns
a new one.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..session._model import Entry, Message
from ..session._profiles import check_profile
from ._serialize import js_trim_end

FILE_OPERATION_SUMMARY_LIMIT = 20
"""The `<files>` block lists at most this many files (oh-my-pi `FILE_OPERATION_SUMMARY_LIMIT`)."""

_READ_TOOL = "read"
_WRITE_TOOL = "write"
_EDIT_TOOL = "edit"

# A `scheme://` anywhere in a path marks an internal URI or a web URL (`artifact://3`,
# `conflict://1`, `https://…`, also the tolerated `file.ts:conflict://1` form): nothing the
# agent can re-read after compaction, so it stays out of the file lists.
_URL_SCHEME_RE = re.compile(r"[a-z][a-z0-9+.\-]*://", re.IGNORECASE)

# Read-tool selector grammar (oh-my-pi `splitReadSelector`): a trailing `:chunk` is a
# selector only when it is a line-range list, `raw` or `conflicts`. `[0-9]` rather than
# `\d`, which in Python would also accept non-ASCII digits.
_RANGE_CHUNK = r"L?[0-9]+(?:(?:[-+]|\.\.)L?[0-9]+|-|\.\.)?"
_RANGE_LIST = rf"{_RANGE_CHUNK}(?:,{_RANGE_CHUNK})*"
_SELECTOR_RE = re.compile(rf"(?:{_RANGE_LIST}|raw|conflicts)", re.IGNORECASE)
_RANGE_ONLY_RE = re.compile(_RANGE_LIST, re.IGNORECASE)
_RAW_ONLY_RE = re.compile("raw", re.IGNORECASE)

_FILE_TAG_RES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(rf"<{tag}>[\s\S]*?</{tag}>[\s\ufeff]*")
    for tag in ("files", "read-files", "modified-files")
)


@dataclass(frozen=True, slots=True)
class FileOperations:
    """Files touched by read/write/edit tool calls: three immutable sets of paths.

    Attributes:
        read: Paths of `read` calls (selector-stripped in the musepi profile).
        written: Paths of `write` calls.
        edited: Paths of `edit` calls (and seeded `modifiedFiles` of earlier summaries).
    """

    read: frozenset[str] = field(default_factory=frozenset)
    written: frozenset[str] = field(default_factory=frozenset)
    edited: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def empty(cls) -> FileOperations:
        """No file operations."""
        return cls()

    def merge(self, other: FileOperations) -> FileOperations:
        """The union of both, set by set."""
        return FileOperations(
            read=self.read | other.read,
            written=self.written | other.written,
            edited=self.edited | other.edited,
        )

    @property
    def modified(self) -> frozenset[str]:
        """Edited or written paths."""
        return self.edited | self.written

    def __bool__(self) -> bool:
        return bool(self.read or self.written or self.edited)


# -- selectors and URLs ------------------------------------------------------------------


def split_read_selector(path: str) -> tuple[str, str | None]:
    """Split a read-tool path into its base path and trailing selector.

    The selector is a line-range list (`50`, `50-200`, `50+10`, `L5-L16`, `5-16,960-973`,
    `5..16`, open `50-` / `50..`), `raw` or `conflicts`, case-insensitive, alone or as the
    compounds `range:raw` / `raw:range`. Anything else after the last colon is part of the
    path (so `C:/x` and `notes:draft` are left alone).

    Args:
        path: A read-tool `path` argument.

    Returns:
        `(base, selector)`, with `selector` None when the path has none.
    """
    colon = path.rfind(":")
    if colon <= 0:
        return path, None
    candidate = path[colon + 1 :]
    if not _SELECTOR_RE.fullmatch(candidate):
        return path, None
    base = path[:colon]
    selector = candidate
    inner = base.rfind(":")
    if inner > 0:
        inner_candidate = base[inner + 1 :]
        inner_raw = bool(_RAW_ONLY_RE.fullmatch(inner_candidate))
        outer_raw = bool(_RAW_ONLY_RE.fullmatch(candidate))
        inner_range = bool(_RANGE_ONLY_RE.fullmatch(inner_candidate))
        outer_range = bool(_RANGE_ONLY_RE.fullmatch(candidate))
        if (inner_raw and outer_range) or (inner_range and outer_raw):
            selector = f"{inner_candidate}:{candidate}"
            base = base[:inner]
    return base, selector


def strip_read_selector(path: str) -> str:
    """The path without its trailing read-tool selector (see `split_read_selector`).

    Examples: `src/a.ts:50-200` → `src/a.ts`; `a.ipynb:1-50:raw` → `a.ipynb`;
    `notes:draft` → unchanged.
    """
    return split_read_selector(path)[0]


def is_url_scheme_path(path: str) -> bool:
    """Whether the path contains a `scheme://` URL (internal URI or web URL)."""
    return _URL_SCHEME_RE.search(path) is not None


# -- extraction --------------------------------------------------------------------------


_KIND_OF_TOOL = {_READ_TOOL: "read", _WRITE_TOOL: "written", _EDIT_TOOL: "edited"}


def _file_ops_of(message: Mapping[str, Any], musepi: bool) -> list[tuple[str, str]]:
    """`(kind, path)` of each file operation of one message (kind: read, written, edited):
    its read/write/edit tool calls whose `arguments.path` is a non-empty string.

    One loop over the blocks (a preparation runs it over every assistant message).
    """
    content = message.get("content")
    if message.get("role") != "assistant" or type(content) is not list:
        return []
    ops: list[tuple[str, str]] = []
    for block in content:
        if type(block) is not dict and not isinstance(block, Mapping):
            continue
        if block.get("type") != "toolCall":
            continue
        name = block.get("name")
        args = block.get("arguments")
        if type(name) is not str or (type(args) is not dict and not isinstance(args, Mapping)):
            continue
        kind = _KIND_OF_TOOL.get(name)
        path = args.get("path")
        if kind is None or type(path) is not str or not path:
            continue
        if musepi:
            if is_url_scheme_path(path):
                continue
            if kind == "read":
                path = strip_read_selector(path)
        ops.append((kind, path))
    return ops


def extract_file_ops(message: Mapping[str, Any], *, profile: str = "pi") -> FileOperations:
    """File operations of one message: its `read`, `write` and `edit` tool calls.

    Only assistant messages count, and only tool calls whose `arguments.path` is a
    non-empty string; tool names must match exactly. The musepi profile strips read
    selectors and skips `scheme://` paths.

    Args:
        message: A runtime message (as stored in a `message` entry).
        profile: `pi` or `musepi`.

    Returns:
        The operations found (empty for non-assistant messages).
    """
    check_profile(profile)
    found: dict[str, set[str]] = {"read": set(), "written": set(), "edited": set()}
    for kind, path in _file_ops_of(message, profile == "musepi"):
        found[kind].add(path)
    if not any(found.values()):
        return FileOperations()
    return FileOperations(
        frozenset(found["read"]), frozenset(found["written"]), frozenset(found["edited"])
    )


def file_ops_from_messages(
    messages: Iterable[Mapping[str, Any]],
    *,
    seed: FileOperations | None = None,
    profile: str = "pi",
) -> FileOperations:
    """File operations of many messages, added to `seed` (e.g. a previous summary's)."""
    check_profile(profile)
    ops = seed if seed is not None else FileOperations()
    for message in messages:
        found = extract_file_ops(message, profile=profile)
        if found:
            ops = ops.merge(found)
    return ops


def _string_items(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, str)]


def seed_from_details(details: Any, *, profile: str) -> FileOperations:
    """File operations carried over from a summary's `details` (spec §4.3 step 8, §5.5).

    `readFiles` go to the read set (selector-stripped in the musepi profile) and
    `modifiedFiles` to the edited set. Anything that is not a list of strings is ignored.

    Args:
        details: The `details` field of a compaction or branch_summary entry.
        profile: `pi` or `musepi`.
    """
    check_profile(profile)
    if not isinstance(details, Mapping):
        return FileOperations()
    read = _string_items(details.get("readFiles"))
    if profile == "musepi":
        read = [strip_read_selector(p) for p in read]
    return FileOperations(
        read=frozenset(read), edited=frozenset(_string_items(details.get("modifiedFiles")))
    )


def is_extension_summary(record: Mapping[str, Any], *, profile: str) -> bool:
    """Whether a compaction/branch_summary record was produced by an extension.

    pi marks them `fromHook`; oh-my-pi renamed the flag `fromExtension` (older MusePi
    files may still carry `fromHook`, so the musepi profile honours both). Their
    `details` are not trusted as file lists.
    """
    check_profile(profile)
    if profile == "pi":
        return record.get("fromHook") is True
    return record.get("fromExtension") is True or record.get("fromHook") is True


def seed_from_entry(entry: Any, *, profile: str) -> FileOperations:
    """The file operations a compaction or branch_summary entry passes on to the next one.

    Empty when the entry came from an extension or has no details.

    Args:
        entry: An `Entry` (or anything with `.get`) of type compaction/branch_summary.
        profile: `pi` or `musepi`.
    """
    if is_extension_summary(entry, profile=profile):
        return FileOperations()
    return seed_from_details(entry.get("details"), profile=profile)


# -- lists -------------------------------------------------------------------------------


def js_sort_key(text: str) -> bytes:
    """Sort key matching JavaScript's default `Array.prototype.sort()` on strings.

    JS compares UTF-16 code units; big-endian UTF-16 bytes compare the same way. It
    differs from Python's code-point order only for characters beyond the BMP.
    """
    return text.encode("utf-16-be", "surrogatepass")


def js_sorted(items: Iterable[str]) -> list[str]:
    """Strings sorted as JavaScript's default sort does."""
    return sorted(items, key=js_sort_key)


def compute_file_lists(ops: FileOperations, *, profile: str = "pi") -> tuple[list[str], list[str]]:
    """`(readFiles, modifiedFiles)`: read-only files and modified files, each JS-sorted.

    modified = edited ∪ written; read-only = read − modified. The musepi profile also
    drops `scheme://` paths (they can arrive through seeded details of old summaries).
    """
    check_profile(profile)
    modified = set(ops.edited | ops.written)
    read = set(ops.read)
    if profile == "musepi":
        modified = {p for p in modified if not is_url_scheme_path(p)}
        read = {p for p in read if not is_url_scheme_path(p)}
    return js_sorted(read - modified), js_sorted(modified)


def file_details(read_files: Sequence[str], modified_files: Sequence[str]) -> dict[str, list[str]]:
    """The `details` value stored on compaction and branch_summary entries."""
    return {"readFiles": list(read_files), "modifiedFiles": list(modified_files)}


# -- pi format ---------------------------------------------------------------------------


def format_file_operations(read_files: Sequence[str], modified_files: Sequence[str]) -> str:
    """pi's two-tag block appended to a summary (spec §5.5).

    `"\\n\\n<read-files>\\n…\\n</read-files>\\n\\n<modified-files>\\n…\\n</modified-files>"`,
    each tag only when its list is non-empty; an empty string when both are.
    """
    sections: list[str] = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    if not sections:
        return ""
    return "\n\n" + "\n\n".join(sections)


# -- musepi grouped tree -----------------------------------------------------------------


@dataclass(slots=True)
class _TreeNode:
    # Mutable only while one call builds it; never escapes `format_grouped_paths`.
    files: list[tuple[str, str]] = field(default_factory=list)
    file_names: set[str] = field(default_factory=set)
    subdirs: list[tuple[str, _TreeNode]] = field(default_factory=list)
    dir_index: dict[str, _TreeNode] = field(default_factory=dict)

    def add_file(self, name: str, key: str) -> None:
        if name in self.file_names:
            return
        self.file_names.add(name)
        self.files.append((name, key))

    def child(self, name: str) -> _TreeNode:
        node = self.dir_index.get(name)
        if node is None:
            node = _TreeNode()
            self.dir_index[name] = node
            self.subdirs.append((name, node))
        return node


def _build_tree(paths: Iterable[str]) -> _TreeNode:
    root = _TreeNode()
    for raw in paths:
        normalized = raw.replace("\\", "/")
        # Only a path that *starts* with a scheme is a URL-like leaf in the tree.
        if _URL_SCHEME_RE.match(normalized):
            root.add_file(normalized, raw)
            continue
        # As oh-my-pi: only a path written with a trailing `/` is a directory leaf (a
        # trailing backslash is trimmed but leaves a file).
        is_dir = raw.endswith("/")
        trimmed = normalized[:-1] if normalized.endswith("/") else normalized
        if not trimmed:
            continue
        # An absolute path keeps its leading empty segment, so all absolute paths share
        # one "" root directory and fold into a `# /x/y/` header.
        segments = trimmed.split("/")
        dir_count = len(segments) if is_dir else len(segments) - 1
        node = root
        for segment in segments[:dir_count]:
            node = node.child(segment)
        if not is_dir:
            node.add_file(segments[-1], raw)
    return root


def _walk_tree(node: _TreeNode, depth: int) -> Iterable[tuple[str, int, str, str]]:
    for name, key in node.files:
        yield "file", depth, name, key
    for name, sub in node.subdirs:
        parts = [name]
        while not sub.files and len(sub.subdirs) == 1:
            only_name, only = sub.subdirs[0]
            parts.append(only_name)
            sub = only
        yield "dir", depth, "/".join(parts), ""
        yield from _walk_tree(sub, depth + 1)


def format_grouped_paths(paths: Sequence[str], annotate: Callable[[str], str] | None = None) -> str:
    """A grouped, prefix-folded directory tree of paths (oh-my-pi `formatGroupedPaths`).

    Rules: backslashes become `/`; a path starting with `scheme://` is a root-level leaf
    kept whole; an absolute path starts with an empty segment, so absolute paths share a
    `/` root; a trailing `/` marks a directory leaf. Depth-first, a directory's own files
    come first (first-seen order, duplicates dropped), then its subdirectories; a directory
    with no files and exactly one subdirectory folds into it (`a/b/c`). A directory line is
    `"#" * (depth + 1) + " " + folded + "/"`, a file line the basename plus `annotate(path)`
    (called with the path as given).

    Args:
        paths: The paths, in the order to list them.
        annotate: Optional suffix for each file line, e.g. `lambda p: " (RW)"`.

    Returns:
        The lines joined with `\\n` (empty for no paths).
    """
    if not paths:
        return ""
    lines: list[str] = []
    for kind, depth, name, key in _walk_tree(_build_tree(paths), 0):
        if kind == "dir":
            lines.append(f"{'#' * (depth + 1)} {name}/")
        else:
            lines.append(name + (annotate(key) if annotate is not None else ""))
    return "\n".join(lines)


def file_markers(
    read_files: Sequence[str], modified_files: Sequence[str], read_set: Iterable[str] | None = None
) -> dict[str, str]:
    """Marker per file: `Read` (read-only), `RW` (modified and in `read_set`), `Write`."""
    reads = frozenset(read_set) if read_set is not None else frozenset()
    mode = dict.fromkeys(read_files, "Read")
    for path in modified_files:
        mode[path] = "RW" if path in reads else "Write"
    return mode


def format_file_list(
    read_files: Sequence[str],
    modified_files: Sequence[str],
    *,
    read_set: Iterable[str] | None = None,
    limit: int = FILE_OPERATION_SUMMARY_LIMIT,
) -> str:
    """The musepi file tree without the `<files>` tags (snapcompact's FILES section).

    All files (read-only and modified) JS-sorted, the first `limit` rendered by
    `format_grouped_paths` with ` (Read)` / ` (Write)` / ` (RW)` markers, then, when more
    remain, a last line `[…N files elided…]` (U+2026 ellipses).

    Args:
        read_files: Read-only files (from `compute_file_lists`).
        modified_files: Modified files.
        read_set: The cumulative read set (`FileOperations.read`): a modified file in it is
            `RW`, otherwise `Write`. Without it every modified file is `Write`.
        limit: How many files to list.
    """
    if not read_files and not modified_files:
        return ""
    mode = file_markers(read_files, modified_files, read_set)
    every = js_sorted(mode)
    text = format_grouped_paths(every[:limit], lambda path: f" ({mode[path]})")
    if len(every) > limit:
        text += f"\n[\u2026{len(every) - limit} files elided\u2026]"
    return text


def format_files_block(
    read_files: Sequence[str],
    modified_files: Sequence[str],
    *,
    read_set: Iterable[str] | None = None,
) -> str:
    """The musepi `<files>` block: `"<files>\\n" + format_file_list(...) + "\\n</files>"`.

    Empty string when there are no files. See `format_file_list` for the content.
    """
    files = format_file_list(read_files, modified_files, read_set=read_set)
    return f"<files>\n{files}\n</files>" if files else ""


def strip_file_operation_tags(summary: str) -> str:
    """The summary without `<files>`, `<read-files>` and `<modified-files>` blocks.

    Each block goes with the whitespace after it, then trailing whitespace is trimmed, so
    summaries written by pi or by older oh-my-pi versions heal on the next compaction.
    """
    for pattern in _FILE_TAG_RES:
        summary = pattern.sub("", summary)
    return js_trim_end(summary)


def upsert_file_operations(
    summary: str,
    read_files: Sequence[str],
    modified_files: Sequence[str],
    *,
    read_set: Iterable[str] | None = None,
) -> str:
    """Replace (or append) the file block of a summary (oh-my-pi `upsertFileOperations`).

    Old blocks are stripped (`strip_file_operation_tags`), then the `<files>` block is
    appended after a blank line; an empty summary becomes the block alone, and with no
    files the stripped summary is returned.
    """
    base = strip_file_operation_tags(summary)
    block = format_files_block(read_files, modified_files, read_set=read_set)
    if not block:
        return base
    if not base:
        return block
    return f"{base}\n\n{block}"


def format_summary_files(ops: FileOperations, *, profile: str) -> tuple[str, dict[str, list[str]]]:
    """The file text to add to a summary and its `details`, for either profile.

    Returns `(suffix, details)`: for pi the two-tag block (append it to the summary); for
    musepi the `<files>` block (use `upsert_file_operations` to place it).
    """
    read_files, modified_files = compute_file_lists(ops, profile=profile)
    details = file_details(read_files, modified_files)
    if profile == "pi":
        return format_file_operations(read_files, modified_files), details
    return format_files_block(read_files, modified_files, read_set=ops.read), details


# -- file operations over a growing prefix ------------------------------------------------
@dataclass(frozen=True, slots=True)
class FileOpsPrefix:
    """File operations of `messages[:k]` (plus a seed) for any k, without re-extracting.

    Each `(kind, path)` is recorded at the first message that touches it; the operations
    of a prefix are the records before k. Union is all `file_ops_from_messages` does, so
    the result equals it.
    """

    seed: FileOperations
    firsts: tuple[tuple[int, str, str], ...]
    first_positions: tuple[int, ...]

    @classmethod
    def build(
        cls, seed: FileOperations, messages: Sequence[Message], profile: str
    ) -> FileOpsPrefix:
        check_profile(profile)
        musepi = profile == "musepi"
        seen: set[tuple[str, str]] = set()
        firsts: list[tuple[int, str, str]] = []
        for position, message in enumerate(messages):
            if message.get("role") != "assistant":
                continue
            for op in _file_ops_of(message, musepi):
                if op not in seen:
                    seen.add(op)
                    firsts.append((position, *op))
        return cls(seed, tuple(firsts), tuple(p for p, _, _ in firsts))

    def upto(self, k: int) -> FileOperations:
        found: dict[str, set[str]] = {"read": set(), "written": set(), "edited": set()}
        for _, kind, file_path in self.firsts[: bisect_left(self.first_positions, k)]:
            found[kind].add(file_path)
        return self.seed.merge(
            FileOperations(
                read=frozenset(found["read"]),
                written=frozenset(found["written"]),
                edited=frozenset(found["edited"]),
            )
        )


def seed_file_ops(previous: Entry | None, profile: str) -> FileOperations:
    """The file operations a previous compaction entry carries forward (none without one)."""
    if previous is None:
        return FileOperations()
    return seed_from_entry(previous, profile=profile)
