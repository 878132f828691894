"""The engine: a composed config becomes trials and one tracked run. :mod:`~mlgraph.engine.experiment`
runs the steps top to bottom: the checks before anything runs (:mod:`~mlgraph.engine.checks`,
an own estimator's test fit in :mod:`~mlgraph.engine.smoke`), the plan of data, trials and
estimator (:mod:`~mlgraph.engine.plan`), resume (:mod:`~mlgraph.engine.checkpoint`), the trials
in worker processes (:mod:`~mlgraph.engine.runner`), and the results and their lineage
(:mod:`~mlgraph.engine.results`, :mod:`~mlgraph.engine.lineage`). Sweeps: a job's place and
name (:mod:`~mlgraph.engine.jobs`), the parent run (:mod:`~mlgraph.engine.sweep`), the launcher
(:mod:`~mlgraph.engine.launcher`); nested tuning (:mod:`~mlgraph.engine.tuning`) and Optuna
searches (:mod:`~mlgraph.engine.optuna_search`); memory estimates (:mod:`~mlgraph.engine.memory`);
paper 002's toy experiment (:mod:`~mlgraph.engine.toy`)."""
