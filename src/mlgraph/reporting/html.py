"""Self-contained HTML pages from the Jinja2 templates in ``mlgraph/reporting/templates``.

Every page extends ``base.html.j2``, which inlines ``style.css``; figures are embedded as data
URIs (:func:`embed_figure`) and nothing is fetched, so a page opens offline in any browser and
can be mailed as it is. Values are escaped by the templates (autoescaping), and a variable a
template uses but the caller did not pass fails at once (:class:`jinja2.StrictUndefined`).
``macros.html.j2`` holds the pieces the pages share: ``table``, ``badge`` and ``figure``.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import jinja2


@functools.cache
def environment() -> jinja2.Environment:
    """The templates' environment: autoescaped, strict about undefined variables."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("mlgraph.reporting", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render(template: str, **context) -> str:
    """The page or fragment ``template`` (a file name in ``templates/``) rendered with ``context``."""
    return environment().get_template(template).render(**context)


@dataclass(frozen=True)
class Figure:
    """A figure as a page shows it: the SVG as a data URI and links to the other formats."""

    src: str  # data:image/svg+xml;base64,...
    caption: str
    links: tuple[tuple[str, str], ...]  # (format, path relative to the page)


def embed_figure(paths: Sequence[Path], caption: str, relative_to: Path) -> Figure:
    """The SVG of a figure written by :func:`mlgraph.evaluation.figures.save_figure`, embedded,
    with links to its PNG and PDF beside the page (paths relative to ``relative_to``); the
    ``figure`` macro of ``macros.html.j2`` shows it."""
    svg = next(p for p in paths if p.suffix == ".svg")
    data = base64.b64encode(svg.read_bytes()).decode("ascii")
    links = tuple(
        (p.suffix[1:].upper(), p.relative_to(relative_to).as_posix()) for p in paths if p.suffix != ".svg"
    )
    return Figure(f"data:image/svg+xml;base64,{data}", caption, links)
