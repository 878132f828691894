"""A self-contained HTML page: inline CSS, figures embedded as data URIs, nothing fetched, so
that the file opens offline in any browser and can be mailed as it is (``mlgraph reproduce``)."""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d1d1f;
       max-width: 1280px; margin: 1.5em auto; padding: 0 1.2em; }
h1 { font-size: 1.6em; margin-bottom: .2em; } h2 { margin-top: 1.8em; border-bottom: 1px solid #ddd; }
h3 { margin-top: 1.4em; } code, pre { font: 13px/1.4 ui-monospace, Menlo, Consolas, monospace; }
pre { background: #f6f8fa; padding: .6em .8em; white-space: pre-wrap; border-radius: 4px; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: 3px 7px; vertical-align: top; text-align: left; }
th { background: #f6f8fa; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.ok { background: #e6f4ea; } .bad { background: #fde7e9; } .na { background: #f3f3f3; color: #666; }
.badge { display: inline-block; padding: 0 6px; border-radius: 9px; font-size: 12px; white-space: nowrap; }
.badge.ok { border: 1px solid #1a7f37; color: #1a7f37; } .badge.bad { border: 1px solid #cf222e; color: #cf222e; }
.badge.na { border: 1px solid #888; }
.box { border: 1px solid #d0d7de; border-left: 5px solid #bf8700; background: #fff8e5;
       padding: .5em 1em; margin: 1em 0; } .box.info { border-left-color: #0969da; background: #f0f6ff; }
.summary td { font-size: 15px; } figure { margin: 1em 0; } figure img { max-width: 100%; }
figcaption { font-size: 13px; color: #555; } .small { font-size: 12px; color: #555; }
.cell small { display: block; color: #555; white-space: nowrap; }
.scroll { overflow-x: auto; }
.row { display: flex; flex-wrap: wrap; gap: 0 1.5em; align-items: flex-start; }
.row figure { flex: 1 1 30%; min-width: 320px; max-width: 420px; }
"""


def esc(text) -> str:
    return html.escape("" if text is None else str(text))


def page(title: str, body: Iterable[str]) -> str:
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{esc(title)}</title>"
        f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def badge(verdict: str, css: str) -> str:
    return f"<span class='badge {css}'>{esc(verdict)}</span>"


def table(
    frame: pd.DataFrame, raw: Sequence[str] = (), numeric: Sequence[str] = (), index: bool = False
) -> str:
    """A frame as an HTML table; columns in ``raw`` hold HTML already, ``numeric`` are right-aligned.
    A ``_class`` column, if present, gives each row's CSS class and is not shown."""
    frame = frame.reset_index() if index else frame
    shown = [c for c in frame.columns if c != "_class"]
    head = "".join(f"<th>{esc(c)}</th>" for c in shown)
    rows = []
    for _, row in frame.iterrows():
        css = f" class='{row['_class']}'" if "_class" in frame and row["_class"] else ""
        cells = []
        for column in shown:
            value = row[column]
            text = value if column in raw else esc("" if pd.isna(value) else value)
            cells.append(f"<td class='num'>{text}</td>" if column in numeric else f"<td>{text}</td>")
        rows.append(f"<tr{css}>{''.join(cells)}</tr>")
    return f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"


def figure(paths: Sequence[Path], caption: str, relative_to: Path) -> str:
    """Embed the SVG of a figure written by :func:`mlgraph.reporting.report.save_figure` as a data URI, with
    links to its PNG and PDF beside the report."""
    svg = next(p for p in paths if p.suffix == ".svg")
    data = base64.b64encode(svg.read_bytes()).decode("ascii")
    links = " · ".join(
        f"<a href='{esc(p.relative_to(relative_to).as_posix())}'>{p.suffix[1:].upper()}</a>"
        for p in paths
        if p.suffix != ".svg"
    )
    return (
        f"<figure><img alt='{esc(caption)}' src='data:image/svg+xml;base64,{data}'>"
        f"<figcaption>{esc(caption)} <span class='small'>({links}, SVG embedded)</span></figcaption></figure>"
    )
