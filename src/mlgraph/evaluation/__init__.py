"""Evaluation: every metric of the four papers (:mod:`~mlgraph.evaluation.metrics`), the
protocols that split data into trials (:mod:`~mlgraph.evaluation.protocols`), the statistics
that compare methods (:mod:`~mlgraph.evaluation.stats`) and the figures that show them
(:mod:`~mlgraph.evaluation.figures`). It sits below the methods, which score with its metrics."""
