"""The folded method note (finrl_tutorial.book.folded): closed in Jupyter, Colab and the book alike."""
import pandas as pd
import pytest
from markdown_it import MarkdownIt

from finrl_tutorial.book.folded import MethodNote, how_measured, reader_words


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


def test_note_shows_a_records_words_about_how_it_was_made_in_the_readers_words():
    note = how_measured("the package's default learner (commit 9c2dee0), two run lengths; the default learner of "
                        "commit 49731b5 with one change off", ["beside other work (the book's build and chapter runs, "
                                                               "a third bench)", ("load", "beside the book's test runs")])
    text = note._repr_markdown_()
    assert "commit" not in text and "book's" not in text
    assert "the package's default learner, two run lengths" in text and "the default learner of that day with" in text
    assert "(other jobs, a third bench)" in text and "**load**: beside other jobs" in text
    assert reader_words("a commitment of 2 days") == "a commitment of 2 days"  # only a commit's hash goes
    assert reader_words("bench learn --out /tmp/runs/abl --threads 1; --out /tmp/s8/runs/x") == \
        "bench learn --out runs/abl --threads 1; --out runs/x"
