"""The one seam through which every request to a model goes.

`ModelClient` (`_client.py`) is the only code that talks HTTP: one retry loop, one error
type (`ModelCallError`, also named `SummarizerError`), keys redacted from every message
(`_errors.py`). Each wire shape has a reader in `_answers.py` that refuses unusable answers;
`DiskCache` (`_cache.py`) stores only answers that passed, keyed by the full request. The
lanes: `OpenAICompatibleSummarizer` (Chat Completions, and the Responses compact endpoint
for `remote`), `RemoteEndpointSummarizer` (a custom `{summary}` endpoint). `LocalModelServer`
(`_local.py`) runs a real model on loopback behind the same Chat Completions lane. A new lane (a
judge, a reader) adds a reader to `_answers.py` and calls `ModelClient.post_json`.
"""

from ._endpoint import RemoteEndpointSummarizer
from ._errors import ModelCallError, SummarizerError, SummarizerNotConfigured
from ._local import LocalModelMissing, LocalModelServer
from ._summarizer import OpenAICompatibleSummarizer
from ._types import Summarizer, SummaryRequest, SummaryResponse

__all__ = [
    "LocalModelMissing",
    "LocalModelServer",
    "ModelCallError",
    "OpenAICompatibleSummarizer",
    "RemoteEndpointSummarizer",
    "Summarizer",
    "SummarizerError",
    "SummarizerNotConfigured",
    "SummaryRequest",
    "SummaryResponse",
]
