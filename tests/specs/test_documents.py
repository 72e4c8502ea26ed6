"""Spec files that a parser chokes on: one ``error: spec: …`` line (issue 25, item 8).

5000-deep arrays and 3000-deep inline tables were RecursionError tracebacks, and so were
5000 dotted keys (``o.o.o… = 1`` nests tables without a bracket); a UTF-8 byte-order mark
was "Invalid statement (line 1, column 1)". Now: the depth is refused before parsing (or,
for dotted keys, before anything walks the tables), and the mark is skipped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dispatchlab.cli import main
from dispatchlab.core.documents import (
    MAX_DEPTH,
    data_depth,
    dotted_depth,
    loads_json,
    loads_toml,
    nesting_depth,
)
from dispatchlab.core.errors import ValidationError
from dispatchlab.specs.experiment import ExperimentSpec
from dispatchlab.specs.run import RunSpec

SWEEP = ('name = "doc"\nloads = [0.5]\nslots = 1000\n[[systems]]\nservers = "2x0.5"\n'
         '[[policies]]\nname = "jsq"\n')
RUN = '[system]\nservers = "2x0.5"\n[policy]\nname = "jsq"\n[run]\nslots = 1000\n'

DEEP = {
    "arrays": "x = " + "[" * 5000 + "]" * 5000 + "\n",
    "inline tables": "x = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n",
    "dotted keys": "o" + ".o" * 5000 + " = 1\n",
    "a dotted table header": "[o" + ".o" * 5000 + "]\nk = 1\n",
    "an array of tables": "[[o" + ".o" * 3000 + "]]\nk = 1\n",
    "just over the limit": "x = " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n",
    "unclosed": "x = " + "[" * 5000 + "\n",
}


def one_error_line(capsys: pytest.CaptureFixture[str], argv: list[str], field: str) -> str:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"error: {field}: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("kind", list(DEEP))
def test_deep_nesting_is_one_error_line(tmp_path: Path, kind: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(DEEP[kind] + SWEEP, encoding="utf-8")
    err = one_error_line(capsys, ["sweep", str(sweep), "--store", str(tmp_path / "s.sqlite"),
                                  "--out", str(tmp_path / "out"), "--no-progress"], "spec")
    assert f"more than {MAX_DEPTH} deep" in err
    run = tmp_path / "run.toml"
    run.write_text(DEEP[kind] + RUN, encoding="utf-8")
    one_error_line(capsys, ["run", str(run)], "spec")
    assert not (tmp_path / "s.sqlite").exists() and not (tmp_path / "out").exists()


def test_deep_json_is_refused_in_a_file_and_in_a_store(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    one_error_line(capsys, ["sweep", str(spec), "--store", str(tmp_path / "s.sqlite"),
                            "--out", str(tmp_path / "out")], "spec")
    from dispatchlab.experiments.store import Store

    with Store(tmp_path / "recv.sqlite") as db:  # a received store with a hostile spec
        db.save_experiment("deep", '{"name": "deep", "x": ' + "[" * 100_000 + "]" * 100_000
                           + "}")
        db.save_experiment("garbage", "not json {")
    for name in ("deep", "garbage"):
        one_error_line(capsys, ["report", name, "--store", str(tmp_path / "recv.sqlite"),
                                "--out", str(tmp_path / name)], "spec")
        assert not (tmp_path / name).exists()


def test_a_byte_order_mark_is_skipped(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(SWEEP, encoding="utf-8-sig")
    assert sweep.read_bytes()[:3] == b"\xef\xbb\xbf"
    assert ExperimentSpec.from_toml(sweep).name == "doc"
    run = tmp_path / "run.toml"
    run.write_text(RUN, encoding="utf-8-sig")
    assert RunSpec.from_toml(run).slots == 1000
    as_json = tmp_path / "spec.json"
    as_json.write_text(ExperimentSpec.from_toml(sweep).to_json(), encoding="utf-8-sig")
    assert main(["sweep", str(as_json), "--store", str(tmp_path / "s.sqlite"), "--out",
                 str(tmp_path / "out"), "--no-progress", "--workers", "1"]) == 0


@pytest.mark.parametrize("content,expected", [
    (b"\xff\xfe" + SWEEP.encode("utf-16-le"), "not UTF-8 text (byte 0xff at offset 0)"),
    (b"\xef\xbb\xbf\xef\xbb\xbf" + SWEEP.encode(), "not valid TOML"),  # two marks: one skipped
    ('name = "caf\xe9"\n'.encode("latin-1"), "not UTF-8 text (byte 0xe9 at offset 11)"),
    (b"name = \"x\"\x00\n", "not valid TOML"),
])
def test_other_encodings_name_the_byte_not_the_content(tmp_path: Path, content: bytes,
                                                       expected: str,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    sweep = tmp_path / "sweep.toml"
    sweep.write_bytes(content)
    assert expected in one_error_line(capsys, ["sweep", str(sweep), "--store",
                                               str(tmp_path / "s.sqlite"), "--out",
                                               str(tmp_path / "out")], "spec")


@pytest.mark.parametrize("text,depth", [
    ("", 0), ("x = 1", 0), ("x = [1, [2]]", 2), ('x = "[[[[["', 0), ("x = '[[[['", 0),
    ('x = """\n[[[[\n"""\ny = [1]', 1), ("# [[[[[\nx = [1]", 1), ('x = "\\"[[["', 0),
    ("[[a]]\n[[b]]\n[c]", 2), ('{"a": [{"b": []}]}', 4),
])
def test_nesting_depth_skips_strings_and_comments(text: str, depth: int) -> None:
    assert nesting_depth(text) == depth


@pytest.mark.parametrize("text,dots", [
    ("", 0), ("x = 1", 0), ("x = 0.5", 1), ("a.b.c = 1", 2), ('a . "b.c" . c = 1', 2),
    ("[a.'b'.c]\nk = 1", 2), ('x = "a.b.c.d"', 0), ("# a.b.c.d\nx = 1", 0),
    ('x = """\na.b.c.d\n"""', 0), ("x = '''\na.b.c\n'''\ny.z = 1", 1), ("a" * 10_000, 0),
])
def test_dotted_depth_counts_the_dots_of_keys_outside_strings_and_comments(
        text: str, dots: int) -> None:
    assert dotted_depth(text) == dots


@pytest.mark.parametrize("key", ["o" + ".o" * 100_000, '"o".' * 100_000 + "o",
                                 "o" + " . o" * 100_000])
def test_a_key_of_many_parts_is_refused_before_the_parser_sees_it(
        key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """tomllib's time on one dotted key grows as the square of its parts (40 s at
    50,000): the scan refuses it first."""
    from dispatchlab.core import documents

    def parser_reached(text: str) -> None:
        raise AssertionError("the parser was given the document")

    monkeypatch.setattr(documents.tomllib, "loads", parser_reached)
    for text in (key + " = 1\n", f"[{key}]\n", f"x = {{{key} = 1}}\n"):
        with pytest.raises(ValidationError, match=f"more than {MAX_DEPTH} deep"):
            loads_toml(text)


def test_limits_are_exact() -> None:
    inside = "x = " + "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert loads_toml(inside)["x"] is not None
    with pytest.raises(ValidationError, match="deep"):
        loads_toml("x = " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    dotted = "o" + ".o" * MAX_DEPTH + " = 1"  # MAX_DEPTH tables below the document
    assert data_depth(loads_toml(dotted)) == MAX_DEPTH + 1
    with pytest.raises(ValidationError, match="deep"):
        loads_toml("o" + ".o" * (MAX_DEPTH + 1) + " = 1")
    assert loads_json(json.dumps([[1]])) == [[1]]
    with pytest.raises(ValidationError, match="not JSON text"):
        loads_json(None)  # type: ignore[arg-type]
