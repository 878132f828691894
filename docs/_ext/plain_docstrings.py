"""Read mlgraph's docstrings as the plain text they are written in.

The docstrings are written for ``help()`` first: NumPy sections, Sphinx roles, ``literals``, but
also plain-text habits that reStructuredText reads differently. This extension adapts three of
them before Sphinx parses a docstring (after napoleon), so the source stays readable as text:

- a list that starts right after a line of text ("Notes:" then "- item") gets the blank line
  reStructuredText needs before and after a list;
- ``|S|``, the size of a set, is not a substitution reference: bars outside literals are escaped;
- a name ending in an underscore (a fitted attribute such as ``n_rounds_``) is not a hyperlink
  reference: the underscore is escaped outside literals;

and it lengthens a section underline that is shorter than its title. The API tables' one-line
summaries read past abbreviations such as "Eq." instead of ending the sentence there. Anything else that is not
valid reStructuredText still fails the strict build, as it should.

It also resolves references to the names a package re-exports (``mlgraph.methods.MLMR`` is
documented as ``mlgraph.methods.manifold.MLMR``), and makes a fully qualified ``mlgraph.…``
reference that resolves to nothing a warning, so that a broken link into the API fails the build.
"""

from __future__ import annotations

import importlib
import re

from sphinx.util import logging

log = logging.getLogger(__name__)

_LITERAL = re.compile(r"(``.*?``|:\w+:`[^`]*`|`[^`]*`_?)")  # inline literals, roles, interpreted text
_BULLET = re.compile(r"^(\s*)[-*•] \S")
_UNDERLINE = re.compile(r"^\s*([-=~^\"'`#*+])\1{2,}\s*$")
_TRAILING_UNDERSCORE = re.compile(r"(?<=\w)_(?=$|[\s,.;:)\]])")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _escape_text(segment: str) -> str:
    return _TRAILING_UNDERSCORE.sub(r"\\_", segment.replace("|", r"\|"))


def _escape(line: str) -> str:
    parts = _LITERAL.split(line)
    return "".join(p if i % 2 else _escape_text(p) for i, p in enumerate(parts))


def adapt(lines: list[str]) -> list[str]:
    out: list[str] = []
    literal_indent = None  # inside a literal block (after a line ending in "::")
    list_indent = None  # inside a bullet list started at this indentation
    for line in lines:
        stripped = line.strip()
        if literal_indent is not None and stripped and _indent(line) <= literal_indent:
            literal_indent = None
        if literal_indent is not None:
            out.append(line)
            continue
        bullet = _BULLET.match(line)
        previous = out[-1] if out else ""
        if bullet:
            at = len(bullet.group(1))
            if previous.strip() and list_indent is None and _indent(previous) <= at:
                out.append("")
            list_indent = at if list_indent is None else min(list_indent, at)
        elif list_indent is not None:
            if not stripped:
                list_indent = None
            elif _indent(line) <= list_indent:  # text at the list's level ends the list
                out.append("")
                list_indent = None
        if _UNDERLINE.match(line) and previous.strip() and len(stripped) < len(previous.strip()):
            line = line[: _indent(line)] + stripped[0] * len(previous.strip())
        elif not _UNDERLINE.match(line):
            line = _escape(line)
        out.append(line)
        if stripped.endswith("::"):
            literal_indent = _indent(line)
    return out


def _process(app, what, name, obj, options, lines):
    lines[:] = adapt(lines)


def _defining_name(target: str) -> str | None:
    """``module.Name`` where the object ``target`` names is defined, if it is elsewhere."""
    module, _, name = target.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError):
        return None
    home = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", name)
    return f"{home}.{qualname}" if home and home != module else None


def _missing_reference(app, env, node, contnode):
    target = node.get("reftarget", "")
    if node.get("refdomain") != "py" or not target.startswith("mlgraph.") or "._" in target:
        return None  # other projects' names, and private ones (base classes, return types)
    real = _defining_name(target)
    if real is not None:
        domain = env.get_domain("py")
        node = node.deepcopy()
        node["reftarget"] = real
        found = domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], real, node, contnode)
        if found is not None:
            return found
    log.warning("reference to %s, which the API reference does not document", target, location=node)
    return None


# Abbreviations that end no sentence: autosummary's one-line summaries read on past them
# (otherwise "... (paper 000, Eq. 19)" is cut at "Eq.").
ABBREVIATIONS = ("Eq.", "Eqs.", "Fig.", "Figs.", "Sec.", "cf.", "vs.", "approx.", "resp.")


def setup(app):
    from sphinx.ext import autosummary

    autosummary.WELL_KNOWN_ABBREVIATIONS = (*autosummary.WELL_KNOWN_ABBREVIATIONS, *ABBREVIATIONS)
    app.connect("autodoc-process-docstring", _process, priority=600)  # after napoleon (500)
    app.connect("missing-reference", _missing_reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
