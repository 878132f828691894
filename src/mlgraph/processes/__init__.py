"""Processes, beside configuration at the bottom of the layers: SIGTERM/SIGINT as exceptions and
workers that die with their parent (:mod:`~mlgraph.processes.signals`), and worker processes
forked from the process that needs them (:mod:`~mlgraph.processes.workers`)."""
