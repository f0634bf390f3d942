"""Job configuration and filter checks fail at start-up, naming the file, the field and the fix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from alertsieve.cli import build_parser
from alertsieve.filtering.checks import not_an_expression, validate
from alertsieve.filtering.model import AlertFilter, FilterError, PythonFilter
from alertsieve.settings import ConfigError, SettingsError, resolve_secret
from alertsieve.stream.config import (
    JobConfig,
    check_writable,
    load_config,
)
from alertsieve.stream.flags import overrides
from alertsieve.stream.source import source_options

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf" / "filter_stream.yaml"


def _yaml(tmp_path, text: str) -> str:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    return str(path)


def _from_command_line(*argv: str) -> JobConfig:
    """What ``alertsieve filter ARGV`` (= ``spark-submit jobs/filter_stream.py ARGV``) runs with."""
    args = build_parser().parse_args(["filter", *argv])
    return load_config(args.config, overrides(args))


def test_yaml_then_flags(tmp_path):
    path = _yaml(
        tmp_path,
        "topic: alerts\nmax_offsets_per_trigger: 500\nkafka_conf: {client.id: a}\n"
        "sql_filters:\n  - name: a\n    sql: diaSource.snr > 5\n",
    )
    cfg = _from_command_line(
        "--config",
        path,
        "--bootstrap",
        "h:1",
        "--max-offsets-per-trigger",
        "900",
        "--sql",
        "b=diaSource.snr > 9",
        "--filters",
        "a,b",
        "--sink",
        "kafka",
        "--kafka-conf",
        "linger.ms=5",
        "--available-now",
        "--no-discover",
        "--trigger",
        "2.5",
    )
    assert (cfg.topic, cfg.bootstrap, cfg.max_offsets_per_trigger) == ("alerts", "h:1", 900)
    assert (cfg.filters, cfg.sinks, cfg.available_now, cfg.discover_filters) == (
        ["a", "b"],
        ["kafka"],
        True,
        False,
    )
    assert (cfg.trigger_seconds, cfg.realtime, cfg.kafka_conf) == (
        2.5,
        None,
        {"client.id": "a", "linger.ms": "5"},
    )
    assert [(f.name, f.sql, f.origin) for f in cfg.settings_filters()] == [
        ("a", "diaSource.snr > 5", f"{path} (sql_filters[0])"),
        ("b", "diaSource.snr > 9", "--sql b"),
    ]


def documented_job_flags() -> dict[str, set[str]]:
    """Every flag of a job command (``alertsieve filter ...``, ``spark-submit jobs/filter_stream.py
    ...``) shown in README.md and docs/ (configuration.md aside: it is generated from the parser),
    with the pages that show it."""
    found: dict[str, set[str]] = {}
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        if page.name == "configuration.md":
            continue
        text = re.sub(r"\\\n\s*", " ", page.read_text())  # a command continued over lines
        for command in re.findall(r"(?:alertsieve filter|filter_stream\.py)\b[^`|\n]*", text):
            for flag in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", command):
                found.setdefault(flag, set()).add(page.name)
    return found


def test_documented_flags_exist_and_each_sets_a_setting():
    """The flags the README and docs show in job commands are all there, and every flag of the job
    is declared on the settings field it sets, so none can drift from the settings file."""
    parser = build_parser()._subparsers._group_actions[0].choices["filter"]
    flags = {s: a.dest for a in parser._actions for s in a.option_strings if s.startswith("--")}
    documented = documented_job_flags()
    assert len(documented) >= 12 and {"--sql", "--trigger", "--available-now"} <= set(documented), (
        documented
    )
    assert {f: pages for f, pages in documented.items() if f not in flags} == {}
    setting_flags = {
        f: d for f, d in flags.items() if f not in ("--help", "--config", "--verbose", "--quiet")
    }
    assert set(setting_flags.values()) <= set(JobConfig.model_fields)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "topic: a\nsinks: kafka\n",
            "sinks = 'kafka': Input should be a valid list; e.g. sinks: [kafka, delta]",
        ),
        (
            'topic: a\nmax_offsets_per_trigger: "20k"\n',
            "max_offsets_per_trigger = '20k': Input should be a valid integer, unable to parse string"
            " as an integer; e.g. max_offsets_per_trigger: 20000",
        ),
        (
            "topic: a\nmax_offset: 3\n",
            "unknown key 'max_offset': did you mean 'max_offsets_per_trigger'? known keys: admission, annotators, archive_trigger_seconds, available_now,",
        ),
        (
            "topic: a\nsinks: [kafka, s3]\n",
            "sinks.1 = 's3': Input should be 'kafka', 'delta' or 'noop'; e.g. sinks: [kafka, delta]",
        ),
        (
            "topic: a\nsinks: [kafka, noop]\n",
            "sinks [noop] publishes nothing, so nothing else can read its output: give noop alone"
            " (--sink noop) or kafka[,delta]",
        ),
        (
            "topic: a\ndelivery: shared\nquota: {records: 10}\n",
            "delivery: shared with a quota for every filter (quota) would share nothing: a filter"
            " with a daily quota keeps its own topic; give quotas in the filters that need one,"
            " or use delivery: topics",
        ),
        (
            "topic: a\ndelivery: shared\ntrigger: realtime\n",
            "delivery: shared runs in micro-batches; Real-Time Mode (--trigger realtime)"
            " publishes a topic per filter: drop one of them",
        ),
        (
            "bootstrap: x\n",
            "give exactly one of 'topic' (--topic) or 'topic_pattern' (--topic-pattern)",
        ),
        (
            "topic: a\nwire_format: plain\n",
            "wire_format 'plain' needs writer_schema_version (e.g. 11.1)",
        ),
        (
            "topic: a\nstarting_offsets: yesterday\n",
            "starting_offsets = 'yesterday': must be earliest, latest or an ISO-8601 time;"
            " e.g. starting_offsets: earliest",
        ),
        (
            "topic: a\nsql_filters:\n  - name: x\n",
            "sql_filters.0.sql = (missing): Field required; e.g. sql_filters: [{name: very_bright,",
        ),
        (
            "topic: a\nfilters:\n  - name: x\n    sql: diaSource.snr > 5\n",
            "filters = a list of SQL filters: 'filters' now chooses filters by name (like --filters);"
            " write ad-hoc SQL filters under 'sql_filters:' instead",
        ),
        (
            "topic: a\ntrigger_seconds: 2\n",
            "trigger_seconds is not a setting: the trigger is 'trigger: SECONDS' or 'trigger: realtime[=DURATION]'",
        ),
        (
            "topic: a\nonly_filters: [x]\n",
            "only_filters is not a setting: filters chosen by name are 'filters: [a, b]'",
        ),
        (
            "topic: a\ntimeout_s: -1\n",
            "timeout_s = -1: Input should be greater than 0; e.g. timeout_s: 600",
        ),
        ("- topic: a\n", "expected a mapping of settings (key: value), got list"),
    ],
)
def test_bad_settings_fail_on_one_line_naming_file_key_and_fix(tmp_path, text, message):
    path = _yaml(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_config(path, {})
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--max-offsets-per-trigger", "20k"],
            "the command line: --max-offsets-per-trigger = '20k': Input should be a valid integer,"
            " unable to parse string as an integer; e.g. --max-offsets-per-trigger 20000",
        ),
        (
            ["--sink", "kafka,s3"],
            "the command line: --sink = 's3': Input should be 'kafka', 'delta'"
            " or 'noop'; e.g. --sink kafka,delta",
        ),
        (
            ["--trigger", "soon"],
            "the command line: --trigger = 'soon': must be a number of seconds"
            " (0: back to back) or realtime[=DURATION]; e.g. --trigger realtime",
        ),
        (
            ["--trigger", "realtime=soon"],
            "the command line: --trigger = 'realtime=soon': realtime=soon:"
            " the checkpoint interval must be like 30s, 5 minutes or 1h",
        ),
        (
            ["--sink", "delta"],
            "the command line: sinks [delta] without kafka: the Delta archive reads"
            " the filters' topics; use sinks: [kafka, delta] (--sink kafka,delta)",
        ),
        (
            ["--sql", "just-an-expression"],
            "the command line: --sql 'just-an-expression': expected NAME=EXPRESSION",
        ),
        (
            ["--kafka-conf", "linger.ms"],
            "the command line: --kafka-conf 'linger.ms': expected KEY=VALUE",
        ),
    ],
)
def test_bad_flags_fail_naming_the_flag_and_fix(argv, message):
    with pytest.raises(ConfigError) as err:
        _from_command_line("--topic", "a", *argv)
    assert str(err.value).startswith(message)


def test_the_cli_reports_a_bad_setting_and_exits_2(tmp_path, capsys):
    from alertsieve.cli import main

    path = _yaml(tmp_path, "topic: a\nsinks: kafka\n")
    assert main(["filter", "--config", path]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"alertsieve filter: error: {path}: sinks = 'kafka': Input should be a valid list;"
        " e.g. sinks: [kafka, delta]"
    )


def test_the_shipped_settings_file_is_valid_and_restates_no_default():
    """conf/filter_stream.yaml sets only what differs from the model's defaults; what it shows in
    comments must be valid settings too (uncommented, the file still loads)."""
    active = yaml.safe_load(CONF.read_text())
    defaults = JobConfig.model_construct()
    for key, value in active.items():
        assert getattr(defaults, key) != value, f"{key} restates the default"
    load_config(CONF, {})
    examples = re.compile(r"^# [a-z_]+:|^#\s{3,}\S")  # "# key: value" and its indented lines
    shown = "\n".join(line[2:] for line in CONF.read_text().splitlines() if examples.match(line))
    uncommented = yaml.safe_load(shown)
    assert set(uncommented) >= {"sinks", "sql_filters", "filters", "kafka_conf", "checkpoint"}
    JobConfig.model_validate(
        {**active, **uncommented, "kafka_conf": {"security.protocol": "PLAINTEXT"}}
    )


def test_secrets_come_from_environment_or_file_and_are_masked(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_PW", "s3cret")
    (tmp_path / "jaas").write_text("jaas-line\n")
    assert resolve_secret("env:KAFKA_PW") == "s3cret"
    assert resolve_secret(f"file:{tmp_path / 'jaas'}") == "jaas-line"
    with pytest.raises(SettingsError, match="environment variable NOPE"):
        resolve_secret("env:NOPE")
    conf = {
        "sasl.username": "alice",
        "sasl.password": "env:KAFKA_PW",
        "security.protocol": "SASL_SSL",
    }
    cfg = JobConfig(topic="a", kafka_conf=conf)
    assert cfg.masked_kafka_conf() == {**conf, "sasl.password": "***"}
    opts = source_options(cfg)
    assert opts["kafka.security.protocol"] == "SASL_SSL"
    assert opts["kafka.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required"
        ' username="alice" password="s3cret";'
    )


def test_a_setting_error_never_shows_a_password(tmp_path):
    path = _yaml(
        tmp_path, "topic: a\nkafka_conf: {security.protocol: SASL_SSL, sasl.password: hunter2}\n"
    )
    with pytest.raises(ConfigError) as e:
        load_config(path, {})
    assert "hunter2" not in str(e.value) and "'sasl.password': '***'" in str(e.value)


def test_incomplete_kafka_security_fails_at_start_up(tmp_path):
    path = _yaml(tmp_path, "topic: a\nkafka_conf: {security.protocol: SASL_SSL}\n")
    with pytest.raises(ConfigError) as e:
        load_config(path, {})
    assert str(e.value) == (
        f"{path}: kafka_conf = {{'security.protocol': 'SASL_SSL'}}: security.protocol=SASL_SSL"
        " needs sasl.username and sasl.password (e.g. sasl.password=env:KAFKA_PASSWORD)"
    )


@pytest.mark.parametrize(
    ("setting", "flag"),
    [("checkpoint", "--checkpoint"), ("delta_path", "--delta-path"), ("metrics_path", "--metrics")],
)
def test_unwritable_folders_fail_at_start_up_naming_setting_and_flag(tmp_path, setting, flag):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    folders = {
        "checkpoint": tmp_path / "ckpt",
        "delta_path": tmp_path / "delta",
        "metrics_path": tmp_path / "m.jsonl",
        setting: blocker / "inside",
    }
    cfg = load_config(None, {"topic": "t", **{k: str(v) for k, v in folders.items()}})
    with pytest.raises(ConfigError) as e:
        check_writable(cfg)
    shown, why = (
        (blocker, "it is a file")
        if setting == "metrics_path"
        else (blocker / "inside", "Not a directory")
    )
    assert str(e.value) == (
        f"the command line: {setting} {shown} is not writable ({why});"
        f" choose a folder this user can write with {flag}"
    )


def test_writable_folders_pass_and_are_created(tmp_path):
    cfg = load_config(
        None,
        {
            "topic": "t",
            "checkpoint": str(tmp_path / "c" / "d"),
            "delta_path": str(tmp_path / "delta"),
            "metrics_path": str(tmp_path / "m" / "x.jsonl"),
        },
    )
    check_writable(cfg)
    assert (tmp_path / "c" / "d").is_dir() and (tmp_path / "delta").is_dir()
    assert list((tmp_path / "c" / "d").iterdir()) == []  # the probe is gone


def test_starting_offsets_from_a_time():
    opts = source_options(JobConfig(topic="a", starting_offsets="2026-11-22T00:00:00+00:00"))
    assert opts["startingTimestamp"] == "1795305600000" and "startingOffsets" not in opts


def _empty_alerts(spark):
    import json

    from pyspark.sql.avro.functions import from_avro

    from alertsieve.alerts.schemas import load_rubin_schema

    empty = spark.createDataFrame([], "value binary")
    return empty.select(
        from_avro("value", json.dumps(load_rubin_schema().definition)).alias("a")
    ).select("a.*")


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (
            "diaSource.snrr > 5",
            "filter 'f' (f.yaml (sql_filters[0])): no field diaSource.snrr; did you mean diaSource.snr?",
        ),
        (
            "diaSorce.snr > 5",
            "filter 'f' (f.yaml (sql_filters[0])): no field diaSorce.snr; did you mean diaSource.snr?",
        ),
        ("diaSource.snr >", "filter 'f' (f.yaml (sql_filters[0])): [PARSE_SYNTAX_ERROR]"),
        ("diaSource.snr * 2", "the expression is double, not boolean; write a condition such as"),
        (
            "diaSource.snr > (SELECT max(x) FROM t)",
            "sql_filters[0])): sql is refused: it contains SELECT",
        ),
        ("true; DROP TABLE alerts", "sql is refused: it contains ';' (one expression"),
        ("diaSource.snr > {min_snr}", "the SQL names a parameter 'min_snr' it does not declare"),
    ],
)
def test_bad_filters_fail_before_the_stream(spark, sql, message):
    with pytest.raises(FilterError) as err:
        validate(
            [AlertFilter(name="f", sql=sql, origin="f.yaml (sql_filters[0])")], _empty_alerts(spark)
        )
    assert message in str(err.value)


def test_among_many_filters_the_bad_one_is_named(spark):
    """The filters compile together in one analysis; a failure is still traced to its filter."""
    good = [
        AlertFilter(name=f"u{k}", sql=f"diaSource.snr > {k}", origin="users.yaml")
        for k in range(300)
    ]
    bad = AlertFilter(name="typo", sql="diaSource.snrr > 5", origin="users.yaml (filters[300])")
    not_boolean = AlertFilter(
        name="flux", sql="diaSource.psfFlux * 2", origin="users.yaml (filters[301])"
    )
    validate(good, _empty_alerts(spark))
    with pytest.raises(
        FilterError,
        match=r"^filter 'typo' \(users.yaml \(filters\[300\]\)\): no field diaSource.snrr; did you mean diaSource.snr\?$",
    ):
        validate([*good, bad, not_boolean], _empty_alerts(spark))
    with pytest.raises(
        FilterError, match=r"^filter 'flux' .*: the expression is double, not boolean"
    ):
        validate([*good, not_boolean], _empty_alerts(spark))
    # one of each shape of numbers is compiled for all: a number Spark refuses is no member
    decimals = [
        AlertFilter(name=f"d{k}", sql=f"diaSource.snr > {k}.5", origin="users.yaml")
        for k in range(3)
    ]
    for number in ("1e400", "0." + "1" * 39):
        beyond = AlertFilter(name="huge", sql=f"diaSource.snr > {number}", origin="users.yaml")
        with pytest.raises(FilterError, match=r"^filter 'huge' \(users.yaml\): "):
            validate([*decimals, beyond], _empty_alerts(spark))


@pytest.mark.parametrize(
    ("sql", "refused"),
    [
        ("diaSource.snr > 5 AND exists(prvDiaSources, s -> s.snr > 5)", None),
        ("diaSource.band = 'select' AND `delete` > 1 AND diaSource.update > 0", None),
        ("extract(YEAR FROM current_date()) > 2020", None),
        ("diaSource.snr IN (select snr FROM other)", "SELECT"),
        ("EXISTS (SELECT 1)", "SELECT"),
        ("true) UNION (VALUES (1)", "VALUES"),
        ("diaSource.snr > 1; INSERT INTO t VALUES (1)", "';'"),
    ],
)
def test_sql_filters_are_expressions_only(sql, refused):
    reason = not_an_expression(sql)
    assert (reason is None) if refused is None else (refused in reason)


def test_python_filter_columns_are_expressions_only():
    f = PythonFilter(
        name="p",
        function=lambda a: a["x"] > 0,
        columns={"x": "(SELECT max(snr) FROM t)"},
        origin="p.py",
    )
    with pytest.raises(
        FilterError, match=r"filter 'p' \(p.py\): columns\['x'\] is refused: it contains SELECT"
    ):
        validate([f], None)


def test_filter_names_are_checked(spark):
    alerts = _empty_alerts(spark)
    with pytest.raises(FilterError, match="is defined twice: a.yaml and b.yaml"):
        validate(
            [AlertFilter("x", "true", origin="a.yaml"), AlertFilter("x", "true", origin="b.yaml")],
            alerts,
        )
    with pytest.raises(FilterError, match="names are letters, digits"):
        validate([AlertFilter("bad name!", "true")], alerts)


def test_filter_parameters_are_overridden_by_name_and_type(tmp_path):
    from alertsieve.filtering.model import with_params

    f = AlertFilter("b", "diaSource.snr > {min_snr}", params={"min_snr": 50.0, "band": "r"})
    assert with_params(f, {"min_snr": 80}, "job.yaml").params == {"min_snr": 80, "band": "r"}
    with pytest.raises(
        FilterError,
        match="job.yaml: filter 'b' has no parameter\\(s\\) \\['snr'\\]; it takes \\['band', 'min_snr'\\]",
    ):
        with_params(f, {"snr": 80}, "job.yaml")
    with pytest.raises(
        FilterError,
        match="parameter 'min_snr' of filter 'b' is a float \\(default 50.0\\); got 'high'",
    ):
        with_params(f, {"min_snr": "high"}, "job.yaml")


@pytest.mark.parametrize(
    ("flag", "realtime"),
    [("realtime", "5 minutes"), ("realtime=90s", "90 seconds"), ("realtime=1 min", "1 minutes")],
)
def test_real_time_mode_is_a_trigger_with_a_checkpoint_interval(flag, realtime):
    cfg = _from_command_line("--topic", "a", "--trigger", flag)
    assert (cfg.realtime, cfg.trigger_seconds) == (realtime, None)


#: Spark 4.1's first lines for a misspelled struct field and a misspelled top-level record, as
#: `alertsieve filters check` met them on the filter view (the list cut short here).
SPARK_FIELD_NOT_FOUND = (
    "[FIELD_NOT_FOUND] No such struct field `snrr` in `diaSourceId`, `visit`, `ra`,"
    " `isNegative`, `snr`, `psfFlux`, `psfFluxErr`. SQLSTATE: 42704"
)
SPARK_UNRESOLVED = (
    "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name"
    " `diaSorce`.`snr` cannot be resolved. Did you mean one of the following? [`diaSource`,"
    " `diaSourceId`, `ssSource`, `diaObject`, `features`]. SQLSTATE: 42703; line 1 pos 0;"
)


@pytest.mark.parametrize(
    ("first", "expression", "want"),
    [
        (
            SPARK_FIELD_NOT_FOUND,
            "diaSource.snrr > 5",
            "no field diaSource.snrr; did you mean diaSource.snr?",
        ),
        (
            SPARK_FIELD_NOT_FOUND.replace("snrr", "zzz"),
            "diaSource.zzz > 5",
            "no field diaSource.zzz (the record has 7 fields)",
        ),
        (
            SPARK_UNRESOLVED,
            "diaSorce.snr > 5",
            "no field diaSorce.snr; did you mean diaSource.snr?",
        ),
        (
            "[PARSE_SYNTAX_ERROR] Syntax error at or near end of input.",
            "x >",
            "[PARSE_SYNTAX_ERROR] Syntax error at or near end of input.",
        ),
    ],
)
def test_a_misspelled_name_gets_the_closest_names(first, expression, want):
    from alertsieve.filtering.checks import readable

    assert readable(first, expression) == want


def _versions_with_diasource_field(name: str) -> list[str]:
    """The Rubin schema versions (7.0 on) whose diaSource record has field ``name``, read from
    the schema files themselves."""
    from alertsieve.alerts.schemas import load_rubin_schema, view_versions

    def has(definition: dict) -> bool:
        source = next(f for f in definition["fields"] if f["name"] == "diaSource")
        return any(f["name"] == name for f in source["type"]["fields"])

    return [v for v in view_versions() if has(load_rubin_schema(v).definition)]


def test_a_misspelled_field_is_answered_with_the_versions_that_have_the_closest(spark):
    """The view holds every version's fields; a field renamed between versions (is_negative in
    7.3-7.4, isNegative from 8.0) is suggested with the versions that carry each spelling."""
    from alertsieve.alerts.schemas import view_versions
    from alertsieve.filtering.prepare import sample_alerts
    from alertsieve.view.decode_settings import DecodeSettings
    from alertsieve.view.surveys import rubin_decoder

    decoder = rubin_decoder(DecodeSettings(topic="alerts", survey="rubin"))
    typo = AlertFilter(name="f", sql="NOT diaSource.isNegativ", origin="f.yaml")
    with pytest.raises(FilterError) as err:
        validate([typo], sample_alerts(spark, decoder), decoder.view)
    camel, snake = (
        _versions_with_diasource_field("isNegative"),
        _versions_with_diasource_field("is_negative"),
    )
    assert (
        camel and snake and len(camel) + len(snake) < len(view_versions())
    )  # some versions have neither
    assert str(err.value) == (
        f"filter 'f' (f.yaml): no field diaSource.isNegativ; did you mean diaSource.isNegative (only in versions"
        f" {', '.join(camel)}) or diaSource.is_negative (only in versions {', '.join(snake)})?"
    )


def test_a_python_filter_is_run_on_the_sample_alerts_its_error_named_its_features_read(spark):
    """A Python filter that raises on the sample alerts fails validation with its name, origin and
    error; one whose columns read the light-curve features of the alert's band validates (its
    check once ran the driver out of heap: the optimizer copied the decode into every field read)."""
    from alertsieve.filtering.features import BANDS
    from alertsieve.filtering.prepare import sample_alerts
    from alertsieve.view.decode_settings import DecodeSettings
    from alertsieve.view.surveys import rubin_decoder

    decoder = rubin_decoder(DecodeSettings(topic="alerts", survey="rubin"))
    alerts = sample_alerts(spark, decoder)
    this_band = (
        "CASE diaSource.band " + " ".join(f"WHEN '{b}' THEN features.{b}" for b in BANDS) + " END"
    )

    def varies(columns, min_points):
        return (columns["n"] >= min_points) & (columns["chi2"] > 3)

    reads_features = PythonFilter(
        name="varies",
        function=varies,
        columns={"n": f"({this_band}).n", "chi2": f"({this_band}).chi2"},
        params={"min_points": 5},
        origin="varies.py",
    )
    validate([reads_features], alerts, decoder.view)  # raised OutOfMemoryError: Java heap space

    def broken(columns):
        raise ValueError("no such band")

    raising = PythonFilter(
        name="broken", function=broken, columns={"n": "size(prvDiaSources)"}, origin="broken.py"
    )
    with pytest.raises(FilterError) as err:
        validate([raising], alerts, decoder.view)
    assert str(err.value) == (
        "filter 'broken' (broken.py) fails on the sample alerts: broken: ValueError: no such band"
    )
