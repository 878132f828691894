"""The report pages' templates (mlgraph.reporting.html): one self-contained page with the
stylesheet inlined, values escaped, and a variable a template needs but is not given an error."""

from __future__ import annotations

import base64
from pathlib import Path

import jinja2
import pytest

from mlgraph.reporting import html

TEMPLATES = Path(html.__file__).parent / "templates"


def _page(**context) -> str:
    source = (
        '{% extends "base.html.j2" %}{% import "macros.html.j2" as m %}'
        "{% block title %}{{ title }}{% endblock %}"
        "{% block content %}{{ m.table(columns, rows, numeric=['n'], classes=['ok']) }}{% endblock %}"
    )
    return html.environment().from_string(source).render(**context)


def test_a_page_inlines_the_stylesheet_and_escapes_what_it_is_given():
    text = _page(title="A & <B>", columns=["name", "n"], rows=[["<script>", 3]])
    assert "<title>A &amp; &lt;B&gt;</title>" in text
    assert f"<style>\n{(TEMPLATES / 'style.css').read_text()}" in text
    assert '<td>&lt;script&gt;</td><td class="num">3</td>' in text and "<script>" not in text
    assert '<tr class="ok">' in text and '<th class="num">n</th>' in text
    assert "<link" not in text and "http" not in text  # nothing to fetch when it opens


def test_a_missing_variable_fails_loudly():
    with pytest.raises(jinja2.UndefinedError, match="rows"):
        _page(title="t", columns=["a"])
    with pytest.raises(jinja2.UndefinedError):
        html.render("reproduce_part.html.j2")


def test_a_figure_is_embedded_with_links_to_its_other_formats(tmp_path):
    figures = tmp_path / "figures"
    figures.mkdir()
    svg = b"<svg xmlns='http://www.w3.org/2000/svg' width='1' height='1'/>"
    paths = [figures / "f.png", figures / "f.svg", figures / "f.pdf"]
    for path in paths:
        path.write_bytes(svg if path.suffix == ".svg" else b"x")
    figure = html.embed_figure(paths, "Fig. 1 <a>", tmp_path)
    assert base64.b64decode(figure.src.removeprefix("data:image/svg+xml;base64,")) == svg
    assert figure.links == (("PNG", "figures/f.png"), ("PDF", "figures/f.pdf"))
    shown = (
        html.environment().from_string('{% import "macros.html.j2" as m %}{{ m.figure(f) }}').render(f=figure)
    )
    assert 'alt="Fig. 1 &lt;a&gt;"' in shown and '<a href="figures/f.pdf">PDF</a>' in shown
