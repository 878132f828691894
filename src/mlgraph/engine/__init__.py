"""The engine: a composed config becomes trials and one tracked run
(:mod:`~mlgraph.engine.experiment`); trials run in parallel workers
(:mod:`~mlgraph.engine.runner`); sweeps, their launcher and their parent run
(:mod:`~mlgraph.engine.sweep`, :mod:`~mlgraph.engine.launcher`); nested tuning
(:mod:`~mlgraph.engine.tuning`) and Optuna searches (:mod:`~mlgraph.engine.optuna_search`);
paper 002's toy experiment (:mod:`~mlgraph.engine.toy`)."""
