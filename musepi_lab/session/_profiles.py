"""The two behaviour profiles every layer takes: MusePi (the default) and pi."""

from __future__ import annotations

from typing import Literal

Profile = Literal["musepi", "pi"]
PROFILES: tuple[Profile, ...] = ("musepi", "pi")
"""`musepi` (the default: MusePi / oh-my-pi behaviour) and `pi` (pi-coding-agent)."""
DEFAULT_PROFILE: Profile = "musepi"


def check_profile(profile: str) -> Profile:
    """`profile` itself when it is one of `PROFILES`; a `ValueError` naming them otherwise."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {', '.join(PROFILES)}")
    return profile
