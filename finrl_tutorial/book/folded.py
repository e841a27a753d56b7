"""The book room's display helpers: Markdown for prose, and a folded block for a section's method details: how its numbers were measured (record, command,
rounds, machine), kept out of the teaching sentences above it.

The block is Markdown wrapped in an HTML ``<details>`` element. CommonMark renders Markdown between
the HTML lines (blank lines around it), so Jupyter, Colab and the built book (which parses a cell's
Markdown output as MyST) all show it closed under its title; a MyST ``{dropdown}`` would show as raw
text outside the book. ``str(note)`` gives the same content as plain text for a terminal.
"""
from __future__ import annotations

import html
import re
from collections.abc import Sequence

import pandas as pd

DEFAULT_TITLE = "How this was measured"


def markdown(text: str):
    """``text`` as an IPython ``Markdown`` object (a cell displays it), or the text itself outside
    IPython. Every module of the book room that returns prose uses this one."""
    try:
        from IPython.display import Markdown  # optional: a notebook has it, plain Python may not
    except ImportError:
        return text
    return Markdown(text)


#: What a record's own note may say about how the records were made (the repository's commits, the
#: book's own builds beside which a bench ran), and what the reader is shown instead: the same fact in
#: the reader's words. The record itself keeps its note as written.
READER_WORDS = ((re.compile(r"\s*\(commit [0-9a-f]{7,40}\)"), ""),
                (re.compile(r"\bof commit [0-9a-f]{7,40}"), "of that day"),
                (re.compile(r"the book's (?:build and chapter runs|builds|build|test runs|test run)"), "other jobs"),
                # a command's scratch folder: where its output went is no part of the method
                (re.compile(r"--out /tmp/(?:[^\s/]+/)*?runs/"), "--out runs/"))


def reader_words(text: str) -> str:
    """``text`` with `READER_WORDS` replaced: ``"the default learner (commit 9c2dee0), two lengths"``
    becomes ``"the default learner, two lengths"``, ``"beside the book's test runs"`` ``"beside other
    jobs"``, ``"--out /tmp/runs/x"`` ``"--out runs/x"``."""
    for pattern, replacement in READER_WORDS:
        text = pattern.sub(replacement, text)
    return text


def _item(item) -> str:
    if isinstance(item, tuple):
        label, text = item
        return f"- **{label}**: {reader_words(str(text))}"
    return f"- {reader_words(str(item))}"


class MethodNote:
    """A closed block titled ``title`` holding ``blocks`` in order. Each block is a paragraph of
    Markdown (a str), a bulleted list (a list of str, or of ``(label, text)`` pairs) or a table (a
    DataFrame)."""

    def __init__(self, blocks: Sequence, title: str = DEFAULT_TITLE):
        self.title = title
        self.blocks = []
        for block in blocks:
            if isinstance(block, tuple):
                block = list(block)
            if not isinstance(block, (str, list, pd.DataFrame)):
                raise TypeError(f"a method note holds paragraphs, lists and tables, not {type(block).__name__}")
            self.blocks.append(block)

    def _body(self, table) -> list[str]:
        parts = []
        for block in self.blocks:
            if isinstance(block, str):
                parts.append(reader_words(block.strip()))
            elif isinstance(block, list):
                parts.append("\n".join(_item(item) for item in block))
            else:
                parts.append(table(block))
        return parts

    def _repr_markdown_(self) -> str:
        body = self._body(lambda frame: frame.to_html(classes="table", border=0))
        return "\n\n".join([f'<details class="how-measured">\n<summary><strong>{html.escape(self.title)}'
                            "</strong></summary>", *body, "</details>"])

    def __str__(self) -> str:
        return "\n\n".join([self.title, *self._body(lambda frame: frame.to_string())])

    __repr__ = __str__

    @property
    def text(self) -> str:
        """Everything the note says, as one string (for tests and word checks)."""
        return str(self)


def how_measured(*blocks, title: str = DEFAULT_TITLE) -> MethodNote:
    """A folded :class:`MethodNote` of ``blocks`` (Markdown paragraphs, lists, tables), titled ``title``."""
    return MethodNote(blocks, title)
