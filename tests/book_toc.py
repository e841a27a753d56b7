"""The book's table of contents as lists of pages, shared by the tests and ``.ci/book_from_executed.py``."""
from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def toc_files(node) -> list[str]:
    """Every ``file:`` entry of a table of contents, in order (parts, chapters, sections)."""
    found = []
    if isinstance(node, dict):
        if "file" in node:
            found.append(node["file"])
        for key in ("parts", "chapters", "sections"):
            for child in node.get(key, []) or []:
                found += toc_files(child)
    return found


def toc_notebooks(root: Path = ROOT) -> list[str]:
    """The entries of ``root/_toc.yml`` that are notebooks (``<entry>.ipynb`` exists), in order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    return [entry for entry in toc_files(toc) if (root / f"{entry}.ipynb").is_file()]
