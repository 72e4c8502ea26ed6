"""A spec file or a results store someone sends you runs nothing (issue 25, item 1).

Function names in data resolve only among the registered reference functions
(dispatchlab.specs.references); nothing a file names is imported or called. Each case is
checked with a module that writes a marker file when imported, placed where Jupyter would
find it (the current directory, on ``sys.path``). The report's "How to reproduce" lines
are shell words: a stored name pasted into a shell runs nothing.
"""

from __future__ import annotations

import html
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from dispatchlab.cli import main
from dispatchlab.core.errors import ValidationError
from dispatchlab.experiments.store import Store
from dispatchlab.specs.experiment import ExperimentSpec
from dispatchlab.specs.figure import ReferenceLine
from dispatchlab.specs.references import (
    BUILTIN,
    reference_function,
    reference_names,
    register_reference_function,
)

EVIL = """\
import pathlib
pathlib.Path(__file__).with_name("MARKER").write_text("imported")
def f(system):
    pathlib.Path(__file__).with_name("CALLED").write_text("called")
    return 1.0
"""

#: names a hostile file could give: the marker module, the stdlib, ours but unregistered
HOSTILE_NAMES = ["evilmod:f", "evilmod", "evilmod.sub:f", "evilmod:f.__call__", "this:s",
                 "code:interact", "os:system", "builtins:exec", "pdb:set_trace",
                 "dispatchlab.theory.bounds:zeta",
                 "dispatchlab.theory.heavy_traffic:pooled_limit.__globals__",
                 ":", "", " dispatchlab.theory.heavy_traffic:pooled_limit"]


@pytest.fixture
def jupyter_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding ``evilmod.py``, made the current directory and put on sys.path."""
    (tmp_path / "evilmod.py").write_text(EVIL, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("evilmod", None)


def assert_nothing_ran(folder: Path) -> None:
    assert not (folder / "MARKER").exists(), "a module named by a file was imported"
    assert not (folder / "CALLED").exists(), "a function named by a file was called"
    assert "evilmod" not in sys.modules


def spec_data(function: object, name: str = "fn-test") -> dict[str, object]:
    return {"name": name, "loads": [0.5], "slots": 1000,
            "systems": [{"servers": "2x0.5"}], "policies": [{"name": "jsq"}],
            "figures": [{"name": "q", "references": [{"label": "x", "function": function}]}]}


def toml_text(function: str, name: str = "fn-test") -> str:
    return (f'name = "{name}"\nloads = [0.5]\nslots = 1000\n[[systems]]\nservers = "2x0.5"\n'
            '[[policies]]\nname = "jsq"\n[[figures]]\nname = "q"\n'
            f"references = [{{label = \"x\", function = {json.dumps(function)}}}]\n")


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_spec_naming_a_function_imports_nothing(jupyter_dir: Path, name: str) -> None:
    path = jupyter_dir / "spec.toml"
    path.write_text(toml_text(name), encoding="utf-8")
    with pytest.raises(ValidationError) as caught:
        ExperimentSpec.from_toml(path)
    assert caught.value.field == "figures[0].references[0].function"
    with pytest.raises(ValidationError):
        ExperimentSpec.from_json(json.dumps(spec_data(name))).validate()
    assert_nothing_ran(jupyter_dir)


def test_sweep_of_such_a_spec_is_one_error_line_and_writes_nothing(
        jupyter_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (jupyter_dir / "spec.toml").write_text(toml_text("evilmod:f"), encoding="utf-8")
    assert main(["sweep", "spec.toml", "--store", "s.sqlite", "--out", "out",
                 "--no-progress"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: figures[0].references[0].function: "
                                        "'evilmod:f' is not a registered reference function")
    assert len(err.strip().splitlines()) == 1
    assert not (jupyter_dir / "s.sqlite").exists() and not (jupyter_dir / "out").exists()
    assert_nothing_ran(jupyter_dir)


@pytest.mark.parametrize("name", ["evilmod:f", "code:interact", 7, ["evilmod:f"]])
def test_drawing_a_figure_imports_nothing(jupyter_dir: Path, name: object) -> None:
    from dispatchlab.report.plots import write_figures

    spec = ExperimentSpec.from_dict(spec_data(name))  # built, never validated
    with Store(jupyter_dir / "s.sqlite") as db:
        frame = db.frame("fn-test")
    with pytest.raises(ValidationError, match="registered reference function"):
        write_figures(spec, frame, jupyter_dir / "figures")
    assert_nothing_ran(jupyter_dir)


def received_store(folder: Path, name: str = "fn-test", function: object = "code:interact"
                   ) -> Path:
    """A store as someone could send it: its spec JSON written by hand."""
    path = folder / "recv.sqlite"
    with Store(path) as db:
        db.save_experiment(name, json.dumps(spec_data(function, name)))
    return path


@pytest.mark.parametrize("name", ["code:interact", "evilmod:f", "os:system"])
def test_report_on_a_received_store_runs_nothing(jupyter_dir: Path, name: str) -> None:
    """The real command in a fresh interpreter whose import path starts with the current
    directory (as in Jupyter), with a payload on stdin for ``code:interact``; it refuses
    before it loads pandas or matplotlib."""
    received_store(jupyter_dir, function=name)
    payload = "import os; os.system('touch PWNED')\n"
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from dispatchlab.cli import main; "
         "code = main(['report', 'fn-test', '--store', 'recv.sqlite', '--out', 'rep']); "
         "print(sorted({'pandas', 'matplotlib'} & set(sys.modules))); sys.exit(code)"],
        cwd=jupyter_dir, input=payload, capture_output=True, text=True, timeout=300,
        check=False)
    assert done.returncode == 2, done.stderr
    assert done.stdout == "[]\n", "the refusal loaded the renderer first (≈ 2 s)"
    assert done.stderr.startswith("error: figures[0].references[0].function: ")
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (jupyter_dir / "PWNED").exists()
    assert not (jupyter_dir / "rep").exists(), "the report was half written"
    assert_nothing_ran(jupyter_dir)


def test_report_in_process_runs_nothing_either(jupyter_dir: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    received_store(jupyter_dir, function="evilmod:f")
    assert main(["report", "fn-test", "--store", "recv.sqlite", "--out", "rep"]) == 2
    assert "not a registered reference function" in capsys.readouterr().err
    assert_nothing_ran(jupyter_dir)


def test_a_registered_name_still_draws(jupyter_dir: Path) -> None:
    from dispatchlab.report.plots import write_figures

    spec = ExperimentSpec.from_dict(spec_data("dispatchlab.theory.heavy_traffic:pooled_limit"))
    spec.validate()
    with Store(jupyter_dir / "s.sqlite") as db:
        frame = db.frame("fn-test")
    assert [p.name for p in write_figures(spec, frame, jupyter_dir / "f")] == ["q.png", "q.svg"]


def test_every_builtin_name_is_where_it_says() -> None:
    for name in BUILTIN:
        function = reference_function(name, "f")
        assert f"{function.__module__}:{function.__qualname__}" == name
    # the name the classic experiment's stores were written with keeps resolving
    moved = reference_function(
        "dispatchlab.experiments.catalog.classic:weighted_random_total_mean", "f")
    assert moved is reference_function(
        "dispatchlab.theory.closed_forms:weighted_random_total_mean", "f")


def user_line(system: object) -> float:
    """A user's own reference function (module level: registrable)."""
    return 2.0


def test_a_function_the_users_code_hands_over_is_registered() -> None:
    line = ReferenceLine("mine", function=user_line)
    name = f"{__name__}:user_line"
    assert line.to_dict()["function"] == name and name in reference_names()
    assert reference_function(name, "f") is user_line
    assert register_reference_function(user_line) is user_line  # again: the same entry


def test_a_builtin_name_cannot_be_taken() -> None:
    def pooled_limit(system: object) -> float:
        return 0.0

    pooled_limit.__module__ = "dispatchlab.theory.heavy_traffic"
    pooled_limit.__qualname__ = "pooled_limit"
    with pytest.raises(ValidationError, match="built-in"):
        register_reference_function(pooled_limit)


@pytest.mark.parametrize("change,field", [
    ({"style": "bogus"}, "style"), ({"style": 3}, "style"), ({"label": 5}, "label"),
    ({"scale_by_epsilon": "yes"}, "scale_by_epsilon"),
    ({"function": None, "field": 5}, "field"),
])
def test_reference_line_fields_are_checked(change: dict[str, object], field: str) -> None:
    data = spec_data("dispatchlab.theory.heavy_traffic:pooled_limit")
    data["figures"][0]["references"][0].update(change)  # type: ignore[index]
    data["figures"][0]["references"][0] = {  # type: ignore[index]
        k: v for k, v in data["figures"][0]["references"][0].items()  # type: ignore[index]
        if v is not None}
    with pytest.raises(ValidationError) as caught:
        ExperimentSpec.from_dict(data).validate()
    assert caught.value.field == f"figures[0].references[0].{field}", str(caught.value)


@pytest.mark.parametrize("change,field", [
    ({"title": 5}, "title"), ({"ci": "no"}, "ci"), ({"log_y": 1}, "log_y"),
    ({"policies": "JSQ"}, "policies"), ({"policies": [1]}, "policies"),
    ({"references": 5}, "references"), ({"systems": {"a": 1}}, "systems"),
])
def test_figure_fields_are_checked(change: dict[str, object], field: str) -> None:
    data = spec_data("dispatchlab.theory.heavy_traffic:pooled_limit")
    data["figures"][0].update(change)  # type: ignore[index]
    with pytest.raises(ValidationError) as caught:
        ExperimentSpec.from_dict(data).validate()
    assert caught.value.field == f"figures[0].{field}", str(caught.value)


HOSTILE_EXPERIMENT_NAMES = ["demo;curl x|sh", "$(touch PWNED)", "a b", "`id`", "x'y", "-rf",
                            "x\ny"]


@pytest.mark.parametrize("name", HOSTILE_EXPERIMENT_NAMES)
def test_how_to_reproduce_is_shell_quoted(tmp_path: Path, name: str) -> None:
    from dispatchlab.report.html import write_report

    data = spec_data("dispatchlab.theory.heavy_traffic:pooled_limit", name)
    with Store(tmp_path / "s.sqlite") as db:
        db.save_experiment(name, json.dumps(data))
        if not name.isprintable():  # refused by the experiment-name rule (check_name)
            with pytest.raises(ValidationError, match="^name: "):
                write_report(db, name, tmp_path / "rep")
            assert not (tmp_path / "rep").exists()
            return
        page = write_report(db, name, tmp_path / "rep").read_text(encoding="utf-8")
    block = html.unescape(re.search(r"<h2>How to reproduce</h2><pre>(.*?)</pre>", page,
                                    re.S).group(1))
    words = [w for w in shlex.split(block, comments=True) if w != "--"]
    assert words[-3:] == ["dispatchlab", "report", name], block
    lexer = shlex.shlex(block, posix=True, punctuation_chars=True)
    lexer.commenters = "#"
    operators = {token for token in lexer if set(token) <= set(";|&`$()<>")}
    assert operators <= {"&&"}, block  # no command beside the install's cd and activate
    if name.startswith("-"):  # not taken for an option
        assert f"report -- {shlex.quote(name)}" in block


# -- a trace error never prints what the file holds ------------------------------------------

SECRET = "root:$6$s3cr3tHash:19000:0:99999:7:::"


@pytest.mark.parametrize("content,suffix", [
    (f"{SECRET}\n", ""), (f"1\n2\n{SECRET}\n", ".csv"), (f"3,{SECRET}\n", ".txt"),
    (f"\x93NUMPY{SECRET}", ".npy"), (SECRET, ".npy"), ("s3cr3tHash", ".npy"),
])
def test_a_trace_error_does_not_echo_the_file(tmp_path: Path, content: str, suffix: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / f"shadow{suffix}"
    if content == "s3cr3tHash":  # a .npy array of strings
        import numpy as np

        np.save(path, np.array([content]))
    else:
        path.write_text(content, encoding="utf-8")
    assert main(["run", "--policy", "jsq", "--servers", "2x0.5", "--slots", "100",
                 "--arrivals", f"trace:{path}"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: arrivals: trace ") and err.count("\n") == 1
    assert "s3cr3t" not in err and "19000" not in err, err
    if suffix != ".npy":
        line = 3 if content.startswith("1\n") else 1
        assert f"(line {line}, column" in err, err
