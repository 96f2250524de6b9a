"""Count the public surface: the `__all__` entries of the top package and of every public
subpackage (found with `pkgutil.walk_packages`, names without a leading underscore).

    python perf/surface_count.py            # one line per list, then the totals
"""

from __future__ import annotations

import importlib
import pkgutil
import sys


def public_packages(root: str = "musepi_lab") -> list[str]:
    """The top package and its public subpackages (no path part starting with `_`)."""
    pkg = importlib.import_module(root)
    names = [root]
    for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{root}."):
        if info.ispkg and not any(p.startswith("_") for p in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def surface(root: str = "musepi_lab") -> dict[str, int]:
    """Package name → number of names in its `__all__` (packages without one are left out)."""
    counts = {}
    for name in public_packages(root):
        mod = importlib.import_module(name)
        if hasattr(mod, "__all__"):
            counts[name] = len(mod.__all__)
    return counts


def main() -> int:
    counts = surface()
    for name, n in counts.items():
        print(f"{n:4d}  {name}")
    top = counts.get("musepi_lab", 0)
    total = sum(counts.values())
    print(
        f"{total:4d}  in all, {len(counts)} lists ({top} top-level + {total - top} in subpackages)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
