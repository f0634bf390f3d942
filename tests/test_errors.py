"""alertsieve's own errors share one base, and the command line tells them from bugs: ours are one
line and exit 2, anything else keeps its traceback."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import alertsieve
from alertsieve import cli
from alertsieve.errors import AlertsieveError
from alertsieve.filtering.model import FilterError


def _library_modules():
    for info in pkgutil.walk_packages(alertsieve.__path__, "alertsieve."):
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

    monkeypatch.setitem(cli.HANDLERS, "filters", ours)
    assert cli.main(["filters", "list"]) == 2
    assert capsys.readouterr().err == (
        "alertsieve filters: error: filter 'x' (x.py): no field diaSource.snrr; did you mean diaSource.snr?\n"
    )
    monkeypatch.setitem(cli.HANDLERS, "filters", bug)
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
    assert said == [f"FAILED  filter 'typo' ({tmp_path / 'typo.py'}): no field diaSource.snrr; did you mean diaSource.snr?"]
