"""``python -m mlgraph COMMAND ...``: the ``mlgraph`` command (see :mod:`mlgraph.cli`)."""

from mlgraph.cli import main

if __name__ == "__main__":
    main()
