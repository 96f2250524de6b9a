"""Every model-calling path against a real model (issue 28): SmolLM2-135M-Instruct served by
llama-cpp-python's OpenAI-compatible server on loopback, reached through the same
`OpenAICompatibleSummarizer` as any endpoint.

One server for the module (`n_ctx` 2048, answers capped at 48 tokens, temperature 0). A
recording proxy sits between the summarizer and the server, so each test reads the bodies
the server received and the usage it answered with: the cost columns are checked against
the server's own counts, never against ours. Missing llama-cpp-python or weights skip the
module, except under CI=true, where they fail it (`make install-local` installs both).
"""

from __future__ import annotations

import json
import os
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from _builders import Chain, prompt, session_header, words

from musepi_lab.bench import run_benchmark
from musepi_lab.cli import main
from musepi_lab.compaction import CompactionSettings
from musepi_lab.llm import (
    LocalModelMissing,
    LocalModelServer,
    ModelCallError,
    OpenAICompatibleSummarizer,
    SummaryRequest,
)
from musepi_lab.llm._local import find_model_file, require_llama_cpp
from musepi_lab.navigation import navigate_tree
from musepi_lab.probes._loopback import echo_reader
from musepi_lab.session._model import Entry
from musepi_lab.session._session import Session
from musepi_lab.strategies import compact
from musepi_lab.testing import StubOpenAIServer

N_CTX = 2048
ANSWER_CAP = 48
PROBE_BUDGET = 600
SPLIT_SEPARATOR = "**Turn Context (split turn):**"

pytestmark = pytest.mark.slow


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


class _Proxy:
    """Forwards every POST to the server and records `(path, body, answer)`."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", "0") or 0))
                request = urllib.request.Request(
                    proxy.target + self.path, data=raw, headers={"content-type": "application/json"}
                )
                try:
                    with urllib.request.urlopen(request, timeout=600) as reply:
                        status, data = reply.status, reply.read()
                except urllib.error.HTTPError as error:
                    status, data = error.code, error.read()
                try:
                    answer = json.loads(data)
                except ValueError:
                    answer = {"raw": data.decode("utf-8", "replace")}
                proxy.calls.append((self.path, json.loads(raw or b"{}"), answer))
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and went away

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def chats(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        return [(b, a) for p, b, a in self.calls if p.endswith("/chat/completions")]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="module")
def local() -> Iterator[LocalModelServer]:
    try:
        require_llama_cpp()
        find_model_file()
    except LocalModelMissing as exc:
        if _in_ci():
            pytest.fail(f"CI=true but the local model cannot run: {exc}", pytrace=False)
        pytest.skip(str(exc))
    with LocalModelServer(n_ctx=N_CTX) as server:
        yield server


@pytest.fixture()
def proxy(local: LocalModelServer) -> Iterator[_Proxy]:
    recorder = _Proxy(local.root_url)
    yield recorder
    recorder.close()


def model(local: LocalModelServer, proxy: _Proxy, **options: Any) -> Any:
    """The summarizer every test uses: the local server, through the recording proxy."""
    options.setdefault("temperature", 0.0)
    options.setdefault("max_output_tokens", ANSWER_CAP)
    options.setdefault("timeout_s", 600.0)  # a busy machine: a retry here would be a timeout's
    return OpenAICompatibleSummarizer(
        base_url=proxy.base_url, model=local.alias, context_window=local.n_ctx, **options
    )


def _usage(proxy: _Proxy) -> tuple[int, int]:
    answers = [a for _, a in proxy.chats()]
    return (
        sum(a["usage"]["prompt_tokens"] for a in answers),
        sum(a["usage"]["completion_tokens"] for a in answers),
    )


def _user(body: dict[str, Any]) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


def parser_session(*, previous: str | None = None) -> Session:
    """A finished turn to summarize (read, edit), then a long last request that is kept."""
    c = Chain("local", assistant_fields={"provider": "p", "model": "m"})
    if previous is not None:
        c.user("Old request")
        c.assistant("Old answer")
        c.add("compaction", summary=previous, firstKeptEntryId="e02", tokensBefore=500)
    c.user("Fix the off-by-one bug in src/parse.py: parse_line drops the last field.")
    c.assistant("Reading it.", calls=(("c1", "read", {"path": "src/parse.py"}),))
    c.result("c1", "def parse_line(s):\n    return s.split(',')[:-1]")
    c.assistant(
        "The slice drops the last field; removing it.",
        calls=(("c2", "edit", {"path": "src/parse.py", "old": "[:-1]", "new": ""}),),
    )
    c.result("c2", "ok")
    c.assistant("Fixed: parse_line keeps every field now.")
    c.user(words(300, "k"))
    return c.session()


def split_session() -> Session:
    """A last turn so long the cut falls inside it: a history request and a prefix request."""
    c = Chain("split", assistant_fields={"provider": "p", "model": "m"})
    c.user("First task: list the files.")
    c.assistant("There are two files, x.py and y.py.")
    c.user("Second task: read both files.")
    c.assistant("Reading x.", calls=(("c1", "read", {"path": "x.py"}),))
    c.result("c1", words(200, "x"))
    c.assistant("Reading y.", calls=(("c2", "read", {"path": "y.py"}),))
    c.result("c2", words(200, "y"))
    c.assistant("Finished.")
    return c.session()


def long_session(tool_chars: int = 2400, reads: int = 2) -> Session:
    """Tool results that together are larger than the server's window (each about 1,350 of
    its tokens: twice what our estimate says, code tokenizes densely)."""
    c = Chain("long", assistant_fields={"provider": "p", "model": "m"})
    c.user("Read every module and tell me what each one does.")
    for i in range(reads):
        c.assistant(f"Reading m{i}.py.", calls=((f"c{i}", "read", {"path": f"m{i}.py"}),))
        body = "\n".join(f"def f{i}_{j}(x):\n    return x + {j}" for j in range(tool_chars // 28))
        c.result(f"c{i}", body)
    c.assistant("Read them all.")
    c.user(words(300, "k"))
    return c.session()


SETTINGS = CompactionSettings.musepi(keep_recent_tokens=100, reserve_tokens=1000)


# -- llm-summary ------------------------------------------------------------------------------


def test_llm_summary_first_summary_and_the_server_usage_is_the_cost(local, proxy) -> None:
    result = compact(
        parser_session(), "llm-summary", settings=SETTINGS, summarizer=model(local, proxy)
    )
    assert result is not None and result.summary.strip()
    ((body, answer),) = proxy.chats()
    assert "<conversation>" in _user(body) and "src/parse.py" in _user(body)
    assert body["max_tokens"] == ANSWER_CAP
    assert answer["model"] == local.alias
    # The cost columns are what the server counted (its own tokenizer and chat template).
    assert (result.summarizer_input_tokens, result.summarizer_output_tokens) == _usage(proxy)
    assert 0 < result.summarizer_output_tokens <= ANSWER_CAP
    assert result.params["summarizer_model"] == local.alias


def test_llm_summary_update_carries_the_previous_summary(local, proxy) -> None:
    session = parser_session(previous="Earlier: renamed tokenize to lex in src/lex.py.")
    result = compact(session, "llm-summary", settings=SETTINGS, summarizer=model(local, proxy))
    assert result is not None and result.summary.strip()
    ((body, _),) = proxy.chats()
    assert "<previous-summary>\nEarlier: renamed tokenize to lex" in _user(body)


def test_llm_summary_split_turn_is_two_answers_merged(local, proxy) -> None:
    result = compact(
        split_session(), "llm-summary", settings=SETTINGS, summarizer=model(local, proxy)
    )
    assert result is not None
    assert len(proxy.chats()) == 2 and result.params["summarizer_requests"] == 2
    history, prefix = (a["choices"][0]["message"]["content"] for _, a in proxy.chats())
    assert SPLIT_SEPARATOR in result.summary
    assert history.strip()[:20] in result.summary and prefix.strip()[:20] in result.summary


def test_llm_summary_additional_context(local, proxy) -> None:
    result = compact(
        parser_session(),
        "llm-summary",
        settings=SETTINGS,
        summarizer=model(local, proxy),
        additional_context=("memory: the user prefers pytest",),
    )
    assert result is not None and result.summary.strip()
    ((body, _),) = proxy.chats()
    assert "<additional-context>\n- memory: the user prefers pytest\n" in _user(body)


# -- a prompt larger than the server's window ----------------------------------------------------


def test_over_the_window_without_folding_is_an_error_naming_the_window(local, proxy) -> None:
    with pytest.raises(ModelCallError, match=f"{N_CTX}"):
        compact(
            long_session(),
            "llm-summary",
            settings=SETTINGS,
            summarizer=model(local, proxy),
            fold=False,
        )
    ((_, answer),) = proxy.chats()  # a client error: not retried
    assert "error" in answer


def test_over_the_window_is_folded_to_fit_by_the_strategys_rule(local, proxy) -> None:
    result = compact(
        long_session(), "llm-summary", settings=SETTINGS, summarizer=model(local, proxy)
    )
    assert result is not None and result.summary.strip()
    chats = proxy.chats()
    assert len(chats) >= 2  # window by window (spec §5.7), each within the server's n_ctx
    for body, answer in chats:
        assert "usage" in answer, answer
        assert answer["usage"]["prompt_tokens"] + body["max_tokens"] <= N_CTX
    # Each later window is an update of the one before.
    assert all("<previous-summary>" in _user(body) for body, _ in chats[1:])
    assert (result.summarizer_input_tokens, result.summarizer_output_tokens) == _usage(proxy)


# -- the other model strategies ----------------------------------------------------------------


def test_handoff(local, proxy) -> None:
    result = compact(parser_session(), "handoff", settings=SETTINGS, summarizer=model(local, proxy))
    assert result is not None and result.summary.strip() and result.method == "handoff"
    assert (result.summarizer_input_tokens, result.summarizer_output_tokens) == _usage(proxy)


def test_summarize_every_n(local, proxy) -> None:
    result = compact(
        split_session(),
        "summarize-every-n",
        settings=SETTINGS,
        summarizer=model(local, proxy),
        n=1,
        keep_last_m_turns=1,
    )
    assert result is not None and result.summary.strip()
    assert len(proxy.chats()) >= 1
    assert (result.summarizer_input_tokens, result.summarizer_output_tokens) == _usage(proxy)


def test_remote_on_a_server_without_the_compact_endpoint_is_a_clear_error(local, proxy) -> None:
    # llama.cpp's server has no `/responses/compact`: the provider-native lane says so.
    with pytest.raises(ModelCallError, match=r"404|responses/compact"):
        compact(parser_session(), "remote", settings=SETTINGS, summarizer=model(local, proxy))
    assert [p for p, _, _ in proxy.calls] == ["/v1/responses/compact"]


# -- branch summaries ------------------------------------------------------------------------


def _record(i: int, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"e{i:02d}",
        "parentId": parent,
        "timestamp": f"2026-01-01T00:00:{i:02d}.000Z",
        "message": message,
    }


def branched_session() -> Session:
    """e00–e03 then two branches off e01; the leaf (last in file order) is e05."""

    def assistant(text: str, path: str) -> dict[str, Any]:
        call = {"type": "toolCall", "id": f"c{path}", "name": "read", "arguments": {"path": path}}
        return {
            "role": "assistant",
            "content": [{"type": "text", "text": text}, call],
            "provider": "p",
            "model": "m",
        }

    records = [
        _record(0, None, {"role": "user", "content": "Fix the parser in src/parse.py."}),
        _record(1, "e00", assistant("Reading it.", "src/parse.py")),
        _record(2, "e01", {"role": "user", "content": "Try the left approach."}),
        _record(
            3, "e02", {"role": "assistant", "content": "Left done.", "provider": "p", "model": "m"}
        ),
        _record(
            4, "e01", {"role": "user", "content": "Try the right approach: rewrite the lexer."}
        ),
        _record(5, "e04", assistant("Reading the lexer in src/lex.py.", "src/lex.py")),
    ]
    return Session(session_header("branchy"), [Entry.from_record(r) for r in records])


def test_branch_summary_through_navigate_tree(local, proxy) -> None:
    session = branched_session()
    result = navigate_tree(session, "e03", summarize=True, summarizer=model(local, proxy))
    assert result.summary_entry is not None
    assert len(proxy.chats()) == 1
    ((body, answer),) = proxy.chats()
    assert "rewrite the lexer" in _user(body)
    text = answer["choices"][0]["message"]["content"]
    assert text.strip() and text.strip() in result.summary_entry.record["summary"]


def test_navigate_summarize_command(local, tmp_path: Path, capsys) -> None:
    source = tmp_path / "branchy.jsonl"
    source.write_bytes(branched_session().to_jsonl())
    before = source.read_bytes()
    out = tmp_path / "navigated.jsonl"
    code = main(
        [
            "navigate",
            str(source),
            "e03",
            "--summarize",
            "--base-url",
            local.base_url,
            "--model",
            local.alias,
            "--context-window",
            str(N_CTX),
            "--out",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert source.read_bytes() == before
    written = [json.loads(line) for line in out.read_text().splitlines()]
    (summary,) = [r for r in written if r.get("type") == "branch_summary"]
    assert summary["summary"].strip()


# -- probes: the reader and the judge -----------------------------------------------------------


def test_probes_in_the_benchmark_are_judged_by_the_model(local, proxy) -> None:
    # The reader is the loopback echo: llama-cpp-python 0.3.36's server refuses the reader's
    # history (see the next test); the judge is the local model.
    sample = Path(__file__).resolve().parents[1] / "datasets" / "sample" / "sample-0004.jsonl"
    with StubOpenAIServer(responder=echo_reader) as echo:
        reader = OpenAICompatibleSummarizer(base_url=echo.base_url, model="loopback-echo")
        df = run_benchmark(
            [sample],
            ["truncate"],
            [PROBE_BUDGET],
            executor="serial",
            progress=False,
            evaluate="probes",
            reader=reader,
            judge=model(local, proxy, max_output_tokens=96),
        )
    (row,) = df.to_dict("records")
    assert row["probe_error"] is None or row["probe_error"] != row["probe_error"], row[
        "probe_error"
    ]
    judged = [
        (b, a) for b, a in proxy.chats() if b["messages"][0]["content"] == prompt("probe-judge")
    ]
    assert judged and len(judged) == len(proxy.chats())
    # The probe cost columns are the server's usage too.
    assert row["probe_judge_input_tokens"] == sum(a["usage"]["prompt_tokens"] for _, a in judged)
    assert row["probe_judge_output_tokens"] == sum(
        a["usage"]["completion_tokens"] for _, a in judged
    )


def test_the_reader_history_with_tool_calls_is_refused_by_this_server(local, proxy) -> None:
    # An assistant message that only calls tools has `content: null` (OpenAI's form);
    # llama-cpp-python 0.3.36 refuses it (HTTP 500, a validation error), and without the key
    # its chat template fails. The error says so; nothing is scored from it.
    history = (
        {"role": "user", "content": "List the files."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.py b.py"},
    )
    request = SummaryRequest(
        system_prompt="Answer.", prompt="Which files?", max_tokens=8, history=history
    )
    with pytest.raises(ModelCallError, match="HTTP 500"):
        model(local, proxy, max_retries=0).summarize(request)


# -- the client's rules on a slow reply --------------------------------------------------------


def test_a_reply_slower_than_the_timeout_is_retried_then_an_error(local, proxy) -> None:
    summarizer = model(local, proxy, timeout_s=0.05, max_retries=1, backoff_s=0.0)
    with pytest.raises(ModelCallError, match=r"(?i)timed? ?out"):
        compact(parser_session(), "llm-summary", settings=SETTINGS, summarizer=summarizer)
    assert summarizer.requests_sent == 2  # the first try and one retry


def test_the_commands_defaults_match_the_library() -> None:
    from musepi_lab.cli import _local_model
    from musepi_lab.llm import _local

    assert _local_model.DEFAULT_LOCAL_CONTEXT == _local.DEFAULT_LOCAL_CONTEXT
    assert _local_model.LOCAL_MODEL_ENV == _local.LOCAL_MODEL_ENV


# -- starting and stopping ---------------------------------------------------------------------


def test_a_missing_model_file_is_named(tmp_path: Path, monkeypatch) -> None:
    missing = tmp_path / "nope.gguf"
    with pytest.raises(LocalModelMissing, match=r"nope\.gguf: no such model file"):
        find_model_file(missing)
    monkeypatch.setenv("MUSEPI_LAB_LOCAL_MODEL", str(missing))
    with pytest.raises(LocalModelMissing, match=r"nope\.gguf"):
        find_model_file()


def test_missing_llama_cpp_says_how_to_install(monkeypatch, capsys) -> None:
    from musepi_lab.llm import _local

    real = _local.importlib.util.find_spec
    monkeypatch.setattr(
        _local.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llama_cpp" else real(name, *a),
    )
    with pytest.raises(LocalModelMissing, match="install-local"):
        LocalModelServer().start()
    assert main(["local-model", "serve", "--port", "0"]) == 2
    assert "llama-cpp-python" in capsys.readouterr().err


def test_serve_command_prints_the_endpoint_and_stops_on_interrupt(local) -> None:
    import signal
    import subprocess
    import sys

    process = subprocess.Popen(
        [sys.executable, "-m", "musepi_lab.cli", "local-model", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    try:
        first = process.stdout.readline()
        assert first.startswith(f"serving {local.alias} at http://127.0.0.1:"), first
        base_url = first.split(" at ", 1)[1].split()[0]
        pid = int(first.rsplit("pid ", 1)[1].rstrip(")\n"))
        with urllib.request.urlopen(f"{base_url}/models", timeout=10) as reply:
            assert reply.status == 200
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 130
        with pytest.raises(ProcessLookupError):
            _wait_gone(pid)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _wait_gone(pid: int) -> None:
    """Signal 0 to `pid` until it is gone (raises ProcessLookupError then) or 10 s pass."""
    import time

    for _ in range(100):
        os.kill(pid, 0)
        time.sleep(0.1)
