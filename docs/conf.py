"""Sphinx configuration of the mlgraph documentation (``make docs``).

Pages are MyST Markdown, the API reference is generated from the docstrings (autodoc,
autosummary, napoleon), and every ``docs/examples/*.py`` is executed by sphinx-gallery during
the build. Nothing is downloaded: no intersphinx inventories, no remote images.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import mlgraph

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

project = "mlgraph"
author = "mlgraph developers"
copyright = "2026, mlgraph developers"  # noqa: A001  (Sphinx's name)
release = mlgraph.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "sphinx_copybutton",
    "sphinx_gallery.gen_gallery",
    "plain_docstrings",  # docs/_ext: lists, |S| and trailing underscores of plain-text docstrings
    "layer_picture",  # docs/_ext: the package's layers drawn from its imports (architecture page)
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "_published",
    "Thumbs.db",
    ".DS_Store",
    "examples",
]  # examples/: the gallery's sources

# --- MyST ------------------------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath", "fieldlist", "smartquotes"]
myst_heading_anchors = 3  # [text](page.md#a-heading) links are checked like any other

# --- API reference ---------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": True, "member-order": "bysource"}
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_class_signature = "separated"
autodoc_preserve_defaults = True
# Hydra, MLflow and the estimators' base classes are documented by their own projects; their
# docstrings (inherited members, for instance) must not break this strict build.
autodoc_inherit_docstrings = False
napoleon_google_docstring = True
napoleon_numpy_docstring = True
napoleon_use_rtype = False
# Names in type hints that resolve to other projects' objects are not links here (offline build:
# no intersphinx); nitpicky stays off, so only broken *internal* references fail the build.
nitpicky = False

# --- Example gallery -------------------------------------------------------------------------
# Every docs/examples/*.py runs during the build; its MLflow stores and outputs go to a
# temporary folder, never to the user's outputs/.
os.environ.setdefault("MLGRAPH_OUTPUT_DIR", tempfile.mkdtemp(prefix="mlgraph-docs-"))
os.environ.setdefault("MPLBACKEND", "Agg")

sphinx_gallery_conf = {
    "examples_dirs": str(DOCS / "examples"),
    "gallery_dirs": str(DOCS / "auto_examples"),
    "filename_pattern": r"/plot_",  # every plot_*.py is executed
    "ignore_pattern": r"/_",  # helpers start with an underscore
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": False,  # report every failing example, then fail the build
    "only_warn_on_example_error": False,
    "matplotlib_animations": False,
    "show_memory": False,
    "min_reported_time": 1,
    "capture_repr": ("_repr_html_", "__repr__"),
    "reference_url": {},  # no links to other projects' sites (offline)
    "backreferences_dir": None,
    "plot_gallery": os.environ.get("MLGRAPH_DOCS_EXAMPLES", "True"),
}

# --- HTML ------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"mlgraph {release}"
html_static_path = ["_static"]
# The published reports (docs/results/): each a self-contained page, copied as it is, served at
# /published/<name>/report.html.
html_extra_path = ["_published"]
html_css_files = ["custom.css"]
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_show_sourcelink = False
html_last_updated_fmt = None

suppress_warnings = [
    # sphinx-gallery writes one `.. only:: html` block per example; MyST's cross-reference
    # search may see a heading twice in generated pages, which is not a broken link
    "myst.xref_ambiguous",
]


def _skip_inherited_api(app, what, name, obj, skip, options):
    """Leave out what scikit-learn generates on every estimator (metadata-routing setters such
    as ``set_fit_request``): it is documented by scikit-learn, with references to its glossary."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_inherited_api)
