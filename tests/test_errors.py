"""alertsieve's own errors share one base, and the command line tells them from bugs: ours are one
line and exit 2, anything else keeps its traceback."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import alertsieve
from alertsieve import cli
from alertsieve.cli import filters as filters_command
from alertsieve.errors import AlertsieveError
from alertsieve.filtering.model import FilterError

#: Modules that import a configured Django (they run inside a TOM); they define no error class:
#: a TOM's stream reports bad settings as Django's ImproperlyConfigured, as tom-alertstreams does.
NEED_A_TOM = {"alertsieve.tom.handlers", "alertsieve.tom.stream"}


def _library_modules():
    for info in pkgutil.walk_packages(alertsieve.__path__, "alertsieve."):
        if info.name not in NEED_A_TOM:
            yield importlib.import_module(info.name)


def test_every_error_class_of_the_library_is_an_alertsieve_error():
    errors = {
        f"{c.__module__}.{c.__qualname__}": c
        for module in _library_modules()
        for _, c in inspect.getmembers(module, inspect.isclass)
        if issubclass(c, Exception) and c.__module__.startswith("alertsieve.")
    }
    assert len(errors) >= 18  # not vacuous: the library's errors were found
    assert [name for name, c in errors.items() if not issubclass(c, AlertsieveError)] == []


def test_ours_are_one_line_and_a_bug_keeps_its_traceback(monkeypatch, capsys):
    def ours(args):
        raise FilterError("filter 'x' (x.py): no field diaSource.snrr; did you mean diaSource.snr?")

    def bug(args):
        raise ValueError("cannot reindex on an axis with duplicate labels")

    monkeypatch.setattr(filters_command, "run_list", ours)
    assert cli.main(["filters", "list"]) == 2
    assert capsys.readouterr().err == (
        "alertsieve filters: error: filter 'x' (x.py): no field diaSource.snrr; did you mean diaSource.snr?\n"
    )
    monkeypatch.setattr(filters_command, "run_list", bug)
    with pytest.raises(ValueError, match="duplicate labels"):
        cli.main(["filters", "list"])


def test_filters_check_answers_a_misspelled_field_in_a_few_lines(spark, tmp_path, capsys):
    """The whole command on a contributed-style module with a typo: a did-you-mean, not Spark's
    list of two hundred field names."""
    (tmp_path / "typo.py").write_text(
        "from alertsieve.filtering.model import AlertFilter\n\n"
        'FILTER = AlertFilter(name="typo", survey="rubin", sql="diaSource.snrr > 5")\n'
    )
    assert cli.main(["filters", "check", "typo", "--filter-path", str(tmp_path)]) == 1
    said = capsys.readouterr().out.splitlines()
    assert said == [
        f"FAILED  filter 'typo' ({tmp_path / 'typo.py'}): no field diaSource.snrr; did you mean diaSource.snr?"
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["produce", "--bootstrap", "127.0.0.1:1", "--topic", "t", "--kafka-conf", "linger"],
            "alertsieve produce: error: --kafka-conf 'linger': expected KEY=VALUE",
        ),
        (
            ["filters", "list", "no_such_filter"],
            "alertsieve filters: error: no filter named ['no_such_filter']; known: ['bright_high_snr', ",
        ),
        (
            ["backtest", "--input", "x.avro", "--since", "yesterday"],
            "argument --since: 'yesterday' is not a night: give a date, YYYY-MM-DD",
        ),
        (["catalog", "add", "stars"], "alertsieve catalog: error: catalog add needs NAME and FILE"),
        (["watch", "add"], "alertsieve watch: error: watch add needs NAME and FILE"),
        (
            ["bench", "filters", "--alerts", "100", "--batch", "100"],
            "alertsieve bench: error: bench filters: --alerts 100 in batches of --batch 100 leave no"
            " full batch after the first (warm-up) to measure the marginal rate on: give --alerts"
            " at least 200 or a smaller --batch",
        ),
    ],
)
def test_a_command_refuses_bad_arguments_in_one_line(args, message, capsys):
    """What the README promises for mistakes on the command line: one line naming the fix, exit 2,
    before any broker or Spark is touched."""
    try:
        code = cli.main(args)
    except SystemExit as e:  # argparse's own refusals
        code = e.code
    err = capsys.readouterr().err
    said = str(code) if isinstance(code, str) else err
    assert message in said, said
    assert code == 2 or isinstance(code, str)
