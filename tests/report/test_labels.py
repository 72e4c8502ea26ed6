"""Labels are drawn as written, never parsed as matplotlib mathtext (issue 25, item 7).

A policy label ``$\\notacommand$`` raised ParseFatalException in ``sweep`` (after its points
were stored), in ``report`` and in ``dl.plot(title=…)``. Every user string now reaches
matplotlib through ``report.labels.plain``; a label starting with ``_`` (which matplotlib's
automatic legend drops) is shown as well.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pytest
from matplotlib import cbook

from dispatchlab.cli import main
from dispatchlab.report.labels import plain

matplotlib.use("Agg")

HOSTILE = [r"$\notacommand$", "$x$", "$", "$$", r"a\$b$c$", r"$\frac{1}{$", "_hidden",
           "$_$", "%s %d {0}", "\\", "line\nbreak $\\alpha$"]


def literal_texts(fig) -> list[str]:
    """What every text of ``fig`` shows, asserting none of it is mathtext."""
    shown = []
    for text in fig.findobj(matplotlib.text.Text):
        raw = text.get_text()
        if raw and not raw.startswith(r"$\mathdefault"):  # tick labels: matplotlib's own
            assert not cbook.is_math_text(raw), raw
            shown.append(raw.replace(r"\$", "$"))
    return shown


@pytest.mark.parametrize("text", HOSTILE)
def test_plain_keeps_the_text_and_leaves_no_mathtext(text: str) -> None:
    assert not cbook.is_math_text(plain(text))
    assert plain(text).replace(r"\$", "$") == text


def spec_toml(label: str, title: str) -> str:
    def quoted(value: str) -> str:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

    return (f'name = "labels"\ntitle = {quoted(title)}\nloads = [0.5]\nslots = 1000\n'
            '[[systems]]\nservers = "2x0.5"\nlabel = "$\\\\sys$"\n'
            f'[[policies]]\nname = "jsq"\nlabel = {quoted(label)}\n'
            '[[policies]]\nname = "rand"\nlabel = "_hidden"\n'
            '[[figures]]\nname = "q"\nxlabel = "$\\\\x$"\nylabel = "$y$"\n'
            'references = [{label = "$\\\\ref$", value = 1.0}]\n')


@pytest.mark.parametrize("label", [r"$\notacommand$", "$a$ and $b$"])
def test_sweep_and_report_draw_such_labels(tmp_path: Path, label: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(spec_toml(label, r"$\title$"), encoding="utf-8")
    store = tmp_path / "s.sqlite"
    assert main(["sweep", str(spec), "--store", str(store), "--out", str(tmp_path / "out"),
                 "--no-progress", "--workers", "1"]) == 0, capsys.readouterr().err
    assert (tmp_path / "out" / "q.png").is_file()
    assert main(["report", "labels", "--store", str(store), "--out",
                 str(tmp_path / "rep")]) == 0, capsys.readouterr().err
    svg = (tmp_path / "rep" / "q.svg").read_text(encoding="utf-8")
    assert "_hidden" in svg  # shown in the legend, not dropped


def test_draw_figure_shows_every_label_literally(tmp_path: Path) -> None:
    from dispatchlab.experiments.store import Store
    from dispatchlab.report.plots import draw_figure
    from dispatchlab.specs.experiment import ExperimentSpec

    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(spec_toml(r"$\notacommand$", "$t$"), encoding="utf-8")
    spec = ExperimentSpec.from_toml(spec_path)
    with Store(tmp_path / "s.sqlite") as db:
        frame = db.frame("labels")
    fig = draw_figure(spec.figures[0], frame, spec)
    fig.savefig(tmp_path / "q.png")
    shown = literal_texts(fig)
    for text in ("$t$: q", r"$\x$", "$y$", r"$\ref$"):
        assert text in shown, shown


@pytest.mark.parametrize("title", HOSTILE[:3])
def test_dl_plot_shows_labels_and_title_literally(title: str) -> None:
    import dispatchlab as dl

    frame = dl.sweep("2x0.5", {r"$\notacommand$": "jsq", "_hidden": "rand"}, load=[0.5],
                     slots=1000, workers=1)
    fig = dl.plot(frame, title=title)
    fig.canvas.draw()
    shown = literal_texts(fig)
    assert title in shown and r"$\notacommand$" in shown and "_hidden" in shown, shown
    matplotlib.pyplot.close(fig)
