"""Local copies of the JavaScript a rendered notebook needs, fetched with `npm pack`.

nbconvert's HTML loads the widget manager (`@jupyter-widgets/html-manager`) and RequireJS
from CDNs by default. The browser check serves them from 127.0.0.1 instead, from npm
tarballs unpacked once into a cache folder outside the repository
(`$XDG_CACHE_HOME/musepi-lab/npm`, default `~/.cache/musepi-lab/npm`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

HTML_MANAGER = "@jupyter-widgets/html-manager@1.0.15"
"""The widget manager for ipywidgets 8 (widget state `version_major` 2); BSD-3-Clause."""
REQUIREJS = "requirejs@2.3.8"
"""The AMD loader `embed-amd.js` needs on the page; MIT."""
NPM_TIMEOUT_S = 180


class AssetFetchError(RuntimeError):
    """`npm pack` could not fetch or unpack a package."""


@dataclass(frozen=True)
class WidgetAssets:
    """Unpacked npm packages, each a folder holding the package's files."""

    html_manager: Path
    requirejs: Path

    @property
    def embed_amd_js(self) -> Path:
        """The script nbconvert's page loads to render saved widget state."""
        return self.html_manager / "dist" / "embed-amd.js"

    @property
    def require_js(self) -> Path:
        """RequireJS itself."""
        return self.requirejs / "require.js"


def default_cache_dir() -> Path:
    """Where unpacked packages are kept between runs."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "musepi-lab" / "npm"


def package_folder_name(spec: str) -> str:
    """A file-system-safe folder name for an npm `name@version` spec."""
    return spec.lstrip("@").replace("/", "__")


def fetch_npm_package(spec: str, cache_dir: Path, npm: str = "npm") -> Path:
    """Unpack the npm package `spec` into `cache_dir` once, and return its folder.

    Args:
        spec: An exact `name@version`.
        cache_dir: Folder holding one sub-folder per unpacked package.
        npm: The npm executable.

    Returns:
        The package folder (the tarball's `package/` contents).

    Raises:
        AssetFetchError: npm failed (no network, unknown version) or the tarball is odd.
    """
    target = cache_dir / package_folder_name(spec)
    if (target / "package.json").is_file():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix=".fetch-") as scratch:
        scratch_dir = Path(scratch)
        try:
            done = subprocess.run(
                [npm, "pack", spec, "--pack-destination", str(scratch_dir), "--silent"],
                cwd=scratch_dir,
                capture_output=True,
                text=True,
                timeout=NPM_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise AssetFetchError(f"npm pack {spec}: {error}") from error
        tarballs = sorted(scratch_dir.glob("*.tgz"))
        if done.returncode != 0 or len(tarballs) != 1:
            raise AssetFetchError(
                f"npm pack {spec} failed (exit {done.returncode}): {done.stderr.strip()[-800:]}"
            )
        unpacked = scratch_dir / "unpacked"
        with tarfile.open(tarballs[0]) as archive:
            archive.extractall(unpacked, filter="data")
        package = unpacked / "package"
        if not (package / "package.json").is_file():
            raise AssetFetchError(f"npm pack {spec}: tarball has no package/package.json")
        # A rename is atomic, so a concurrent run sees either nothing or the whole package.
        try:
            package.rename(target)
        except OSError:
            if not (target / "package.json").is_file():
                raise
    return target


def fetch_widget_assets(cache_dir: Path | None = None, npm: str = "npm") -> WidgetAssets:
    """The html-manager and RequireJS packages, fetched into the cache when missing.

    Raises:
        AssetFetchError: A package could not be fetched or lacks the expected file.
    """
    cache = cache_dir or default_cache_dir()
    assets = WidgetAssets(
        html_manager=fetch_npm_package(HTML_MANAGER, cache, npm),
        requirejs=fetch_npm_package(REQUIREJS, cache, npm),
    )
    for needed in (assets.embed_amd_js, assets.require_js):
        if not needed.is_file():
            raise AssetFetchError(f"expected file missing from the npm package: {needed}")
    return assets


def find_npm() -> str | None:
    """The npm executable on PATH, or None."""
    return shutil.which("npm")
