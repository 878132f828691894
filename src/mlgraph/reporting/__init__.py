"""Reporting: comparisons read back from MLflow (:mod:`~mlgraph.reporting.runs`), the
``mlgraph report`` tables and figures (:mod:`~mlgraph.reporting.report`), two comparisons side by
side (:mod:`~mlgraph.reporting.side_by_side`), ``mlgraph reproduce`` (:mod:`~mlgraph.reporting.reproduce`)
and ``mlgraph hparams`` (:mod:`~mlgraph.reporting.hparams`)."""
