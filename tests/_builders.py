"""Small sessions, prompt texts and a loopback OpenAI stub, shared by several test files.

A plain module rather than `conftest.py`, so tests can import it by name even when pytest
also collects `notebooks/`, which has a conftest of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest
from _corpus import REPO_ROOT

from musepi_lab.session._model import Entry
from musepi_lab.session._session import Session
from musepi_lab.testing import StubOpenAIServer
from musepi_lab.tokens._counter import TokenCounter

PROMPTS = REPO_ROOT / "prompts"


def prompt(name: str) -> str:
    """A prompt file as the prompt set serves it (one trailing newline dropped)."""
    return (PROMPTS / f"{name}.md").read_text(encoding="utf-8").removesuffix("\n")


def words(n: int, letter: str = "a") -> str:
    """Exactly n tokens for both estimators (4·n ASCII characters)."""
    return letter * 4 * n


def session_header(session_id: str) -> dict[str, Any]:
    """A v3 session header record."""
    return {
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": "2026-01-01T00:00:00.000Z",
    }


class Chain:
    """A linear v3 session, one entry after another (ids e00, e01, …; one second apart)."""

    def __init__(
        self,
        session_id: str,
        records: Sequence[dict[str, Any]] = (),
        *,
        assistant_fields: Mapping[str, Any] | None = None,
    ) -> None:
        """Starts a chain.

        Args:
            session_id: The header's id.
            records: Records already in the chain; new entries continue after the last.
            assistant_fields: Extra fields for every assistant message (e.g. provider, model).
        """
        self.header = session_header(session_id)
        self.records: list[dict[str, Any]] = list(records)
        self.last: str | None = self.records[-1]["id"] if self.records else None
        self.assistant_fields = dict(assistant_fields or {})

    def add(self, kind: str, **fields: Any) -> str:
        """Appends an entry of any type; returns its id."""
        entry_id = f"e{len(self.records):02d}"
        self.records.append(
            {
                "type": kind,
                "id": entry_id,
                "parentId": self.last,
                "timestamp": f"2026-01-01T00:00:{len(self.records):02d}.000Z",
                **fields,
            }
        )
        self.last = entry_id
        return entry_id

    def msg(self, message: dict[str, Any]) -> str:
        """Appends a message entry."""
        return self.add("message", message={"timestamp": 0, **message})

    def user(self, text: str) -> str:
        """Appends a user message."""
        return self.msg({"role": "user", "content": text})

    def assistant(
        self, text: str | None = None, calls: tuple = (), thinking: str | None = None
    ) -> str:
        """Appends an assistant message: thinking, text, then (id, name, args) tool calls."""
        content: list[dict[str, Any]] = []
        if thinking:
            content.append({"type": "thinking", "thinking": thinking})
        if text:
            content.append({"type": "text", "text": text})
        content += [
            {"type": "toolCall", "id": cid, "name": name, "arguments": args}
            for cid, name, args in calls
        ]
        stop = "toolUse" if calls else "stop"
        return self.msg(
            {"role": "assistant", "content": content, "stopReason": stop, **self.assistant_fields}
        )

    def result(self, call_id: str, text: str, name: str = "read", **flags: Any) -> str:
        """Appends a successful tool result; `flags` add or override message fields."""
        return self.msg(
            {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": name,
                "content": [{"type": "text", "text": text}],
                "isError": False,
                **flags,
            }
        )

    def session(self) -> Session:
        """The chain as an immutable Session."""
        return Session(self.header, [Entry.from_record(r) for r in self.records])


def valid_pairing(messages: Sequence[Mapping[str, Any]]) -> bool:
    """Every tool result answers a call made earlier in the context."""
    calls: set[str] = set()
    for msg in messages:
        content = msg.get("content")
        if msg.get("role") == "assistant" and isinstance(content, list):
            calls.update(b["id"] for b in content if b.get("type") == "toolCall")
        if msg.get("role") == "toolResult" and msg.get("toolCallId") not in calls:
            return False
    return True


def stub_server_fixtures(
    responder: Callable[[dict[str, Any]], str],
) -> tuple[Any, Any]:
    """The `shared_server` and `server` fixtures for a module, answering with `responder`.

    Assign both in the test module: `shared_server, server = stub_server_fixtures(fn)`.
    One server per module, because stopping one waits out serve_forever's 0.5 s poll;
    `server` clears requests and failures and restores the responder around each test.
    """

    @pytest.fixture(scope="module")
    def shared_server() -> Iterator[StubOpenAIServer]:
        with StubOpenAIServer(responder=responder) as srv:
            yield srv

    @pytest.fixture
    def server(shared_server: StubOpenAIServer) -> Iterator[StubOpenAIServer]:
        shared_server.requests.clear()
        shared_server.failures.clear()
        shared_server.responder = responder
        yield shared_server
        shared_server.failures.clear()
        shared_server.responder = responder

    return shared_server, server


class CountingCounter(TokenCounter):
    """Counts how often a message is actually counted."""

    def __init__(self, method: str) -> None:
        super().__init__(method)
        self.calls = 0

    def count_message(self, message: Any) -> int:
        self.calls += 1
        return super().count_message(message)
