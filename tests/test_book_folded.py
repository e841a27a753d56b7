"""The folded method note (finrl_tutorial.book.folded): closed in Jupyter, Colab and the book alike."""
import pandas as pd
import pytest
from markdown_it import MarkdownIt

from finrl_tutorial.book.folded import MethodNote, how_measured


def test_note_is_markdown_inside_a_closed_details_element_that_commonmark_renders():
    note = how_measured("The record is `x.json`.", ["a **b**", ("rounds", "5")],
                        pd.DataFrame({"ratio": [1.5]}), title="How this was measured")
    page = MarkdownIt("commonmark").render(note._repr_markdown_())
    assert page.startswith('<details class="how-measured">') and "<details open" not in page
    assert "<summary><strong>How this was measured</strong></summary>" in page
    assert "<p>The record is <code>x.json</code>.</p>" in page  # Markdown between the HTML lines is parsed
    assert "<li>a <strong>b</strong></li>" in page and "<li><strong>rounds</strong>: 5</li>" in page
    assert "<table" in page and page.rstrip().endswith("</details>")


def test_note_as_text_keeps_the_order_of_its_blocks():
    note = how_measured("first", ["second"], title="T")
    assert str(note) == "T\n\nfirst\n\n- second" and note.text == str(note)


def test_note_refuses_what_it_cannot_show():
    with pytest.raises(TypeError, match="paragraphs, lists and tables"):
        MethodNote([42])
