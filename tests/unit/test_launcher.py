"""The processes launcher's job function: overrides that do not compose make a failed job (its
worker serves the next one), not a dead worker."""

from types import SimpleNamespace

from hydra.core.singleton import Singleton
from hydra.core.utils import JobStatus
from hydra.errors import ConfigCompositionException

from mlgraph.engine.launcher import execute_job


def test_overrides_that_do_not_compose_are_a_failed_job():
    error = ConfigCompositionException("Could not override 'method.nosuch'.")

    def load_sweep_config(config, overrides):
        raise error

    context = SimpleNamespace(config_loader=SimpleNamespace(load_sweep_config=load_sweep_config))
    ret = execute_job(3, ["method.nosuch=1"], context, None, None, Singleton.get_state())
    assert ret.status == JobStatus.FAILED and ret._return_value is error
    assert ret.overrides == ["method.nosuch=1"]
