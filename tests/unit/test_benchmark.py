"""``mlgraph benchmark``'s suites and plan, decided before anything runs: the suite files, the
data sets present or missing, the methods that apply, --quick, the reference, the commands, and
each (method, data set) as exact, scalable or not runnable."""

from pathlib import Path

import pandas as pd
import pytest

from mlgraph.config.app import CONFIG_DIR
from mlgraph.data import registry
from mlgraph.engine.checks import ConfigError
from mlgraph.reporting.benchmark import command, plan, report, suites
from mlgraph.reporting.benchmark.plan import (
    RUN,
    SCALABLE,
    SKIPPED,
    Composer,
    decide,
    make_plan,
    parse_overrides,
)
from mlgraph.reporting.benchmark.suites import BenchmarkError, load_suite, read_suite

PAPER000 = ("mlmrrw", "mlmr", "mlknn", "gfhf", "lgc", "fsksc", "sswl")


@pytest.fixture
def builtin_only(monkeypatch):
    """Only the data shipped in the package is present (no mirror, no cache)."""
    monkeypatch.setattr(registry, "data_dirs", lambda: [registry.BUILTIN_DIR])


@pytest.fixture
def own_conf(tmp_path):
    """A --config-dir with a method of the user's own (MLkNN under another name) and a suite."""
    (tmp_path / "method").mkdir()
    text = (CONFIG_DIR / "method" / "mlknn.yaml").read_text().replace("name: mlknn", "name: mine")
    (tmp_path / "method" / "mine.yaml").write_text(text)
    (tmp_path / "benchmark").mkdir()
    (tmp_path / "benchmark" / "tiny.yaml").write_text(
        "description: two methods\nmethods: [mlknn, mine]\nreference: mine\nprotocol: halves\nrepeats: 3\n"
        "datasets: [emotions]\n"
    )
    return tmp_path


# --- Suites --------------------------------------------------------------------------------------
def test_shipped_suites_read_as_documented():
    ssl = load_suite("ssl")
    assert ssl.methods == PAPER000 and ssl.reference == "mlmrrw" and ssl.protocol == "ssl"
    assert ssl.rates == (0.05, 0.1, 0.2, 0.5) and ssl.datasets is None
    assert ssl.quick.datasets == ("emotions", "scene", "yeast") and ssl.quick.repeats == 2
    assert set(ssl.scalable) == {"mlmr", "mlmrrw"}
    supervised = load_suite("supervised")
    assert supervised.protocol == "fixed" and supervised.fallback_protocol == "halves"
    assert set(supervised.methods) == {
        "ml2", "br", "clr", "ecc", "rakel", "mlknn", "mlrbf", "bpmll", "ranksvm", "mlmr", "mlmrrw"
    }  # fmt: skip
    assert supervised.methods[0] == supervised.reference  # a call stopped early has the reference …
    assert supervised.methods[-2:] == ("bpmll", "ranksvm")  # … and the slowest run last
    assert supervised.quick.protocol == "halves" and supervised.rates is None


def test_unknown_suite_is_one_paragraph_listing_the_suites():
    with pytest.raises(BenchmarkError) as err:
        load_suite("sll")
    text = str(err.value)
    assert "no suite 'sll'" in text and "ssl (" in text and "supervised (" in text and "\n" not in text


def test_a_suite_of_the_users_own_is_found_in_the_config_dir(own_conf):
    tiny = load_suite("tiny", [own_conf])
    assert tiny.methods == ("mlknn", "mine") and tiny.source == own_conf / "benchmark" / "tiny.yaml"
    assert tiny.metrics == ("avg_precision", "micro_f1", "macro_f1")  # the default
    assert "tiny" in suites.suite_files([own_conf]) and "tiny" not in suites.suite_files()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("methods: [a]\nreference: a\nprotocol: ssl\nrate: [0.1]\n", "unknown key(s) rate"),
        ("methods: [a]\nprotocol: ssl\n", "the key(s) reference are required"),
        ("methods: a\nreference: a\nprotocol: ssl\n", "methods must be a list of names"),
        ("methods: [a]\nreference: a\nprotocol: ssl\nrates: [0, 0.5]\n", "labelling rates in (0, 1]"),
        ("methods: [a]\nreference: a\nprotocol: ssl\nquick: {repeats: 0}\n", "quick.repeats must be"),
    ],
)
def test_a_bad_suite_file_names_the_file_and_the_key(tmp_path, text, says):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(BenchmarkError, match=r"bad\.yaml") as err:
        read_suite(path)
    assert says in str(err.value)


# --- The command line's overrides ---------------------------------------------------------------
def test_overrides_split_into_the_benchmarks_and_the_runs():
    options = parse_overrides(
        [
            "method=mlmrrw,mine",
            "dataset='emotions,yeast'",
            "protocol.rates=[0.2,0.5]",
            "protocol.repeats=3",
            "report.reference=mine",
            "tracking=server",
            "hydra/launcher=slurm",
            "graph.k=5",
        ]
    )
    assert options.methods == ("mlmrrw", "mine") and options.datasets == ("emotions", "yeast")
    assert options.rates == (0.2, 0.5) and options.repeats == 3 and options.reference == "mine"
    assert options.passthrough == ("tracking=server", "hydra/launcher=slurm", "graph.k=5")
    assert options.settings == ("report.reference=mine", "tracking=server")


@pytest.mark.parametrize(
    "arg", ["protocol.rates=[0,0.5]", "protocol.rates=abc", "protocol.repeats=0", "method="]
)
def test_bad_benchmark_overrides_are_one_paragraph(arg):
    with pytest.raises(BenchmarkError, match="mlgraph benchmark"):
        parse_overrides([arg])


# --- Data sets present and missing, protocols ------------------------------------------------
def test_quick_runs_the_shipped_data_sets_with_few_rates_and_repetitions(builtin_only):
    p = make_plan(load_suite("ssl"), parse_overrides([]), quick=True)
    assert p.datasets == ["emotions", "scene", "yeast"] and p.experiment == "benchmark-ssl-quick"
    assert p.rates == (0.1, 0.5) and p.repeats == 2 and p.reference == "mlmrrw"
    assert len(p.pairs) == 21 and {x.status for x in p.pairs} == {RUN}
    left = {m.dataset for m in p.missing}
    assert left == set(plan.registered_datasets()) - {"emotions", "scene", "yeast"}
    assert all("left out by --quick" in m.why for m in p.missing)
    # one sweep: every method on every data set, into the experiment, resumable
    ((_, args),) = p.commands
    assert args[:3] == ["-m", "method=mlmrrw,mlmr,mlknn,gfhf,lgc,fsksc,sswl", "dataset=emotions,scene,yeast"]
    for arg in ("protocol=ssl", "protocol.rates=[0.1,0.5]", "protocol.repeats=2", "resume=true"):
        assert arg in args
    assert "tracking.experiment=benchmark-ssl-quick" in args


def test_missing_data_sets_are_listed_with_their_fetch_command(builtin_only):
    p = make_plan(load_suite("ssl"), parse_overrides(["method=mlmrrw"]))
    assert p.datasets == ["emotions", "scene", "yeast"] and p.experiment == "benchmark-ssl"
    missing = {m.dataset: m for m in p.missing}
    assert set(missing) == set(plan.registered_datasets()) - {"emotions", "scene", "yeast"}
    assert missing["bibtex"].fetch == "python -m mlgraph.data bibtex --fetch"
    assert "bibtex.arff" in missing["bibtex"].why


def test_supervised_uses_the_published_split_where_there_is_one_and_halves_otherwise():
    if registry.missing_files("emotions") or registry.missing_files("cal500"):
        pytest.skip("needs emotions' published split and cal500 (../shared/datasets or the cache)")
    p = make_plan(load_suite("supervised"), parse_overrides(["dataset=emotions,cal500", "method=mlmrrw,br"]))
    assert p.protocols == {"emotions": "fixed", "cal500": "halves"}
    assert sorted(a[3] for _, a in p.commands) == ["protocol=fixed", "protocol=halves"]


def test_a_published_split_missing_here_is_listed_not_replaced(builtin_only):
    p = make_plan(load_suite("supervised"), parse_overrides(["dataset=emotions", "method=mlmrrw,br"]))
    assert p.datasets == [] and p.commands == []
    (m,) = p.missing
    assert "published split is not available offline" in m.why and m.fetch.endswith("emotions --fetch")
    # --quick runs halves, which need only the shipped files
    q = make_plan(load_suite("supervised"), parse_overrides(["method=mlmrrw,br"]), quick=True)
    assert q.protocols == {"emotions": "halves", "scene": "halves", "yeast": "halves"}


def test_an_unknown_or_dual_set_data_set_is_one_paragraph():
    with pytest.raises(BenchmarkError, match="no data set 'emotion'"):
        make_plan(load_suite("ssl"), parse_overrides(["dataset=emotion"]))
    with pytest.raises(BenchmarkError, match="voice is a dual_set table"):
        plan.resolve(load_suite("ssl"), ["voice"], "ssl", None)


# --- Methods and the reference -----------------------------------------------------------------
def test_a_method_that_does_not_apply_is_one_paragraph_before_anything_runs():
    with pytest.raises(BenchmarkError) as err:
        make_plan(load_suite("ssl"), parse_overrides(["method=mlmrrw,dsml"]))
    text = str(err.value)
    assert "dsml does not apply to this suite" in text and "dual-set" in text and "DSML" in text
    assert "The other methods given apply: mlmrrw." in text


def test_an_unknown_method_lists_the_methods():
    with pytest.raises(BenchmarkError, match="no method 'mlmrw'.*mlmrrw"):
        make_plan(load_suite("ssl"), parse_overrides(["method=mlmrrw,mlmrw"]))


def test_the_users_method_is_the_reference_and_a_missing_reference_is_one_paragraph(own_conf, builtin_only):
    p = make_plan(
        load_suite("ssl"),
        parse_overrides(["method=mlmrrw,mine", "dataset=emotions"]),
        config_dir=str(own_conf),
    )
    assert p.reference == "mine" and [x.method for x in p.pairs] == ["mlmrrw", "mine"]
    assert p.commands[0][1][1:3] == ["--config-dir", str(own_conf.resolve())]
    with pytest.raises(BenchmarkError, match="reference method 'mlmrrw'.*not among the methods"):
        make_plan(load_suite("ssl"), parse_overrides(["method=mlknn,lgc"]))
    with pytest.raises(BenchmarkError, match="report.reference"):
        make_plan(load_suite("ssl"), parse_overrides(["method=mlknn,lgc", "report.reference=gfhf"]))


def test_a_method_whose_extra_is_missing_is_one_paragraph(monkeypatch):
    from mlgraph.config import extras

    monkeypatch.setattr(extras, "installed", lambda extra: extra != "skmultilearn")
    with pytest.raises(BenchmarkError, match=r"pip install 'mlgraph\[skmultilearn\]'"):
        make_plan(load_suite("ssl"), parse_overrides(["method=mlmrrw,skml_mlknn"]))


# --- Each (method, data set): exact, scalable, or why not ------------------------------------
def _check_failing(fail_when):
    """A pre-run check that raises the engine's ConfigError when ``fail_when(overrides)``."""

    def check(overrides):
        if fail_when(overrides):
            raise ConfigError(
                "method mlmrrw on dataset big needs ~12.5 GB for 40,000 rows (the exact solver)."
            )

    return check


def test_a_pair_too_large_for_the_exact_path_runs_under_its_scalable_settings():
    suite = load_suite("ssl")
    exact_only = _check_failing(lambda o: "method.solver=nystrom" not in o)
    pair = decide(suite, "big", "mlmrrw", "ssl", ["protocol.repeats=2"], exact_only)
    assert pair.status == SCALABLE and pair.needs_gb == 12.5
    assert pair.overrides == ("method.solver=nystrom", "graph.search=approximate")
    assert decide(suite, "small", "mlmrrw", "ssl", [], _check_failing(lambda o: False)).status == RUN


def test_where_nothing_fits_the_cell_says_why():
    suite = load_suite("ssl")
    pair = decide(suite, "big", "mlmrrw", "ssl", [], _check_failing(lambda o: True))
    assert pair.status == SKIPPED and pair.needs_gb == 12.5
    assert "With its scalable settings (method.solver=nystrom graph.search=approximate)" in pair.why
    sswl = decide(suite, "big", "sswl", "ssl", [], _check_failing(lambda o: True))  # no scalable settings
    assert sswl.status == SKIPPED and sswl.overrides == () and "needs ~12.5 GB" in sswl.why


def test_scalable_settings_leave_out_an_option_whose_extra_is_missing(monkeypatch):
    from mlgraph.config import extras

    monkeypatch.setattr(extras, "installed", lambda extra: extra != "approximate")
    kept, notes = plan.scalable_settings(load_suite("ssl"), "mlmrrw")
    assert kept == ("method.solver=nystrom",) and "mlgraph[approximate]" in notes[0]


def test_the_real_check_sends_a_pair_over_budget_to_the_nystrom_solver():
    # ML-MRRW on emotions at 50 %: 395 training rows; exact 1.75 × 8 × 395² = 2.18 MB; Nyström
    # with 50 landmarks 1.5 × 8 × 395 × 50 + 8 × 395 × 72 = 0.46 MB
    composer = Composer(None, budget=1e6)
    base = ["protocol.rates=[0.5]", "protocol.repeats=1", "method.n_landmarks=50"]
    pair = decide(load_suite("ssl"), "emotions", "mlmrrw", "ssl", base, composer.check)
    assert pair.status == SCALABLE and pair.needs_gb == pytest.approx(1.75 * 8 * 395**2 / 1e9, rel=0.01)
    assert "needs ~0.0022 GB for 395 rows" in pair.why and "more than the 0.001 GB" in pair.why
    tight = decide(load_suite("ssl"), "emotions", "mlmrrw", "ssl", base, Composer(None, budget=1e5).check)
    assert tight.status == SKIPPED


def test_a_config_error_of_one_pair_is_its_cell():
    # mlknn's k = 500 exceeds emotions' training rows: that pair cannot run, and says so
    pair = decide(
        load_suite("ssl"),
        "emotions",
        "mlknn",
        "ssl",
        ["protocol.repeats=1", "method.k=500"],
        Composer(None, 1e12).check,
    )
    assert pair.status == SKIPPED and "method.k=500 is too large" in pair.why and pair.needs_gb is None


def test_scalable_and_exact_pairs_run_in_separate_sweeps():
    p = plan.BenchmarkPlan(
        load_suite("ssl"), False, "benchmark-ssl", ["mlmrrw", "mlknn"], "mlmrrw", ["a", "b"],
        {"a": "ssl", "b": "ssl"}, (0.1,), 2, [],
        pairs=[
            plan.Pair("a", "mlmrrw", "ssl"),
            plan.Pair("a", "mlknn", "ssl"),
            plan.Pair("b", "mlmrrw", "ssl", SCALABLE, ("method.solver=nystrom",)),
            plan.Pair("b", "mlknn", "ssl"),
            plan.Pair("c", "mlmrrw", "ssl", SKIPPED, (), "needs ~9 GB", 9.0),
        ],
    )  # fmt: skip
    found = sorted((a[1], a[2], "method.solver=nystrom" in a) for _, a in plan.commands(p))
    assert found == [
        ("method=mlknn", "dataset=b", False),
        ("method=mlmrrw", "dataset=b", True),
        ("method=mlmrrw,mlknn", "dataset=a", False),
    ]


# --- The memory budget -------------------------------------------------------------------------
def test_memory_budget_follows_the_launcher(monkeypatch):
    from mlgraph.engine import memory

    assert command.memory_budget(3.0, []) == 3e9
    assert command.memory_budget(None, ["hydra/launcher=slurm"]) == 4e9  # conf/hydra/launcher/slurm.yaml
    assert command.memory_budget(None, ["hydra/launcher=slurm", "hydra.launcher.mem_gb=32"]) == 32e9
    monkeypatch.setattr(memory, "machine_budget", lambda jobs: 1e9 / jobs)
    assert command.memory_budget(None, ["hydra.launcher.n_jobs=4"]) == 0.25e9


def test_the_command_says_bad_input_in_one_paragraph_and_exits_2(capsys):
    assert command.main(["nosuch"]) == 2
    assert "no suite 'nosuch'" in capsys.readouterr().err
    assert command.main(["ssl", "method=mlmrrw,dsml"]) == 2
    assert "does not apply" in capsys.readouterr().err
    assert command.main(["ssl", "--config-dir", str(Path("/nonexistent/folder"))]) == 2


def test_launcher_overrides_reach_the_sweeps_not_the_pre_run_checks(builtin_only):
    seen = []
    p = make_plan(
        load_suite("ssl"),
        parse_overrides(
            ["method=mlmrrw", "dataset=emotions", "hydra/launcher=slurm", "hydra.launcher.mem_gb=8"]
        ),
        check=seen.append,
    )
    ((_, args),) = p.commands
    assert args[-2:] == ["hydra/launcher=slurm", "hydra.launcher.mem_gb=8"]
    assert seen and not any(o.startswith("hydra") for overrides in seen for o in overrides)


# --- The report: runs merged, cells marked -----------------------------------------------------
def _trials(rates_reps, value):
    return pd.DataFrame(
        [
            {
                "rate": r,
                "repetition": k,
                "status": "ok",
                "avg_precision": value + k / 100,
                "fit_seconds": 1.0 + k,
                "predict_seconds": 0.5,
            }
            for r, k in rates_reps
        ]
    )


def test_scores_merge_a_pairs_runs_newest_first_and_pair_on_seed_and_repetition(monkeypatch):
    from mlgraph.reporting import runs as runs_module

    tables = {
        "new": _trials([(0.2, 0), (0.2, 1)], 0.8),
        "old": _trials([(0.1, 0), (0.2, 0)], 0.5),
        "nys": _trials([(0.1, 0)], 0.3),
        "knn": _trials([(0.1, 0), (0.2, 0)], 0.6),
    }
    monkeypatch.setattr(runs_module, "artifact_table", lambda run_id, name: tables[run_id])
    runs = pd.DataFrame(
        {
            "run_id": ["old", "new", "nys", "knn"],
            "tags.dataset": ["emotions"] * 4,
            "tags.method": ["mlmrrw", "mlmrrw", "mlmrrw", "mlknn"],
            "start_time": pd.to_datetime(["2026-01-01", "2026-01-02", "2026-01-03", "2026-01-01"]),
            "params.seed": ["0", "0", "0", "1"],
            "params.method.solver": ["exact", "exact", "nystrom", None],
        }
    )
    p = plan.BenchmarkPlan(
        load_suite("ssl"), False, "x", ["mlmrrw", "mlknn"], "mlmrrw", ["emotions"], {"emotions": "ssl"},
        None, None, [], pairs=[plan.Pair("emotions", "mlmrrw", "ssl"), plan.Pair("emotions", "mlknn", "ssl")],
    )  # fmt: skip
    scores, how = report.read_scores(p, runs, ["avg_precision"])
    mine = scores[scores.method == "mlmrrw"].set_index(["rate", "repetition"])["avg_precision"]
    # the exact runs only (the plan ran it exact); 0.2 from the newest run, 0.1 from the older
    assert mine.to_dict() == {(0.1, "0:0"): 0.5, (0.2, "0:0"): 0.8, (0.2, "0:1"): 0.81}
    # trials' seconds: fit 1 + k, predict 0.5, for (0.2, 0), (0.2, 1) of "new" and (0.1, 0) of "old"
    assert how[("emotions", "mlmrrw")] == {
        "scalable": False,
        "runs": ["new", "old"],
        "trials": 3,
        "seconds": 5.5,
    }
    status = report.status_table(p, how)
    assert status[["method", "trials", "trial_seconds"]].values.tolist() == [
        ["mlmrrw", 3, 5.5],
        ["mlknn", 2, 3.0],
    ]
    p.pairs.append(plan.Pair("scene", "mlknn", "ssl", SKIPPED, why="needs ~9 GB"))
    times = report.time_table(p, report.status_table(p, {k: v for k, v in how.items() if k[1] == "mlmrrw"}))
    assert times["columns"] == ["data set", "ML-MRRW", "MLkNN"]
    assert times["rows"] == [["emotions", "6 s (3)", "not finished"], ["scene", "", "cannot run"]]
    assert set(scores[scores.method == "mlknn"]["repetition"]) == {"1:0"}  # another seed: another split
    p.pairs[0] = plan.Pair("emotions", "mlmrrw", "ssl", SCALABLE, ("method.solver=nystrom",))
    scores, how = report.read_scores(p, runs, ["avg_precision"])
    assert how[("emotions", "mlmrrw")]["scalable"] and len(scores[scores.method == "mlmrrw"]) == 1


def test_cells_are_marked_for_the_scalable_settings_and_say_why_a_pair_could_not_run():
    from mlgraph.evaluation.comparison import compare_metric

    scores = pd.DataFrame(
        [
            {"dataset": d, "method": m, "repetition": k, "avg_precision": base + 0.01 * k}
            for d, shift in (("a", 0.0), ("b", 0.1))
            for m, base in (("mlmrrw", 0.7 + shift), ("mlknn", 0.6 + shift))
            for k in range(3)
        ]
    )
    p = plan.BenchmarkPlan(
        load_suite("ssl"), False, "x", ["mlmrrw", "mlknn", "sswl"], "mlmrrw", ["a", "b"], {"a": "ssl", "b": "ssl"},
        None, None, [],
        pairs=[
            plan.Pair("a", "mlmrrw", "ssl"), plan.Pair("a", "mlknn", "ssl"), plan.Pair("a", "sswl", "ssl"),
            plan.Pair("b", "mlmrrw", "ssl", SCALABLE, ("method.solver=nystrom",), "needs ~12 GB", 12.0),
            plan.Pair("b", "mlknn", "ssl"),
            plan.Pair("b", "sswl", "ssl", SKIPPED, (), "method sswl ... needs ~1,365 GB ...", 1365.0),
        ],
    )  # fmt: skip
    how = {("a", "mlmrrw"): {"scalable": False}, ("b", "mlmrrw"): {"scalable": True}}
    comparison = report._marked(compare_metric(scores, "avg_precision", reference="mlmrrw"), p, how)
    assert comparison.cells.loc[("b", "mlmrrw"), "mark"] == "†"
    assert comparison.cells.loc[("a", "mlmrrw"), "mark"] == ""
    assert comparison.cells.loc[("b", "mlknn"), "mark"] == "•"  # 0.1 better in every repetition
    assert any("†: ran under the scalable settings (method.solver=nystrom)" in n for n in comparison.notes)
    assert "SSWL on b could not run: needs ~1,365 GB" in comparison.notes
    block = report.Block(0.1, "10 % labelled", "rate_10", {"avg_precision": comparison})
    means = report.means_table(p, [block], "avg_precision")
    row_b = next(r for r in means["rows"] if r["label"] == "b")
    assert [c["text"] for c in row_b["cells"]] == ["0.810 ± 0.010", "0.710 ± 0.010", "needs ~1,365 GB"]
    assert row_b["cells"][0]["mark"] == "†" and row_b["cells"][2]["title"].startswith("method sswl")


def test_a_warning_of_the_checks_is_shown_once_not_once_per_method(monkeypatch):
    import warnings

    from mlgraph.data import DataWarning
    from mlgraph.engine import experiment, memory

    def prepare(cfg):
        warnings.warn("genbase: 1073 of 1185 features are constant", DataWarning, stacklevel=1)
        return object()

    monkeypatch.setattr(experiment, "prepare", prepare)
    monkeypatch.setattr(memory, "check_memory", lambda cfg, plan, budget: None)
    composer = plan.Composer(None, 10.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for method in ("mlmrrw", "mlknn", "gfhf"):
            composer.check([f"method={method}", "dataset=emotions"])
    assert [str(w.message) for w in caught] == ["genbase: 1073 of 1185 features are constant"]
    assert caught[0].category is DataWarning
