"""The shipped calibration's fitted values (placeholder until regenerated)."""

FIT_DATE = ""
FIT_SESSIONS: tuple[str, ...] = ()
TOKEN_RATIO: dict[str, float] = {"anthropic": 1.5, "openai": 1.0, "neutral": 1.0}
RATIO_SPREAD: dict[str, float] = {"anthropic": 0.0, "openai": 0.0, "neutral": 0.0}
MISS_RATE: dict[str, float] = {"anthropic": 0.0, "openai": 0.0, "neutral": 0.0}
OPENAI_TTL_SECONDS = 450.0
SYSTEM_PROMPT_TOKENS: tuple[tuple[str, tuple[int, ...], int], ...] = (
    ("claude-code", (2,), 25_800),
    ("claude-code", (0,), 14_700),
    ("codex", (0, 100), 12_000),
    ("codex", (0,), 10_000),
    ("pi", (0,), 2_000),
)
WARM_PREFIX_TOKENS: tuple[tuple[str, tuple[int, ...], int], ...] = (
    ("claude-code", (2,), 17_800),
    ("claude-code", (0,), 4_700),
)
