"""Job configuration and filter checks fail at start-up, naming the file, the field and the fix."""

from __future__ import annotations

import pytest

from alertsieve.filtering import (
    AlertFilter,
    FilterError,
    PythonFilter,
    not_an_expression,
    parse_sql_flag,
    validate,
)
from alertsieve.stream_job import (
    ConfigError,
    JobConfig,
    check_writable,
    load_config,
    resolve_secret,
    source_options,
)


def _yaml(tmp_path, text: str) -> str:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    return str(path)


def test_yaml_then_flags(tmp_path):
    path = _yaml(
        tmp_path,
        "topic: alerts\nmax_offsets_per_trigger: 500\nfilters:\n  - name: a\n    sql: diaSource.snr > 5\n",
    )
    cfg = load_config(
        path,
        {
            "bootstrap": "h:1",
            "max_offsets_per_trigger": 900,
            "filters": [parse_sql_flag("b=diaSource.snr > 9")],
        },
    )
    assert (cfg.topic, cfg.bootstrap, cfg.max_offsets_per_trigger) == ("alerts", "h:1", 900)
    assert [(f.name, f.sql, f.origin) for f in cfg.filters] == [
        ("a", "diaSource.snr > 5", f"{path} (filters[0])"),
        ("b", "diaSource.snr > 9", "--sql b"),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("topic: a\nmax_offset: 3\n", "unknown setting(s) ['max_offset']"),
        ("topic: a\nsinks: [kafka, s3]\n", "unknown sink(s) ['s3']; use kafka and/or delta"),
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
            "starting_offsets must be earliest, latest or an ISO-8601 time",
        ),
        ("topic: a\nfilters:\n  - name: x\n", "(filters[0]): a filter needs 'name' and 'sql'"),
    ],
)
def test_bad_settings_name_file_and_fix(tmp_path, text, message):
    path = _yaml(tmp_path, text)
    with pytest.raises((ConfigError, FilterError)) as err:
        load_config(path, {})
    assert path in str(err.value) and message in str(err.value)


def test_secrets_come_from_environment_or_file_and_are_masked(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_PW", "s3cret")
    (tmp_path / "jaas").write_text("jaas-line\n")
    assert resolve_secret("env:KAFKA_PW") == "s3cret"
    assert resolve_secret(f"file:{tmp_path / 'jaas'}") == "jaas-line"
    with pytest.raises(ConfigError, match="environment variable NOPE"):
        resolve_secret("env:NOPE")
    conf = {"sasl.username": "alice", "sasl.password": "s3cret", "security.protocol": "SASL_SSL"}
    cfg = JobConfig(topic="a", kafka_conf=conf)
    assert cfg.masked_kafka_conf() == {**conf, "sasl.password": "***"}
    opts = source_options(cfg)
    assert opts["kafka.security.protocol"] == "SASL_SSL"
    assert opts["kafka.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required"
        ' username="alice" password="s3cret";'
    )


def test_incomplete_kafka_security_fails_at_start_up(tmp_path):
    path = _yaml(tmp_path, "topic: a\nkafka_conf: {security.protocol: SASL_SSL}\n")
    with pytest.raises(ConfigError) as e:
        load_config(path, {})
    assert str(e.value) == (
        f"{path}: kafka_conf: security.protocol=SASL_SSL needs sasl.username and sasl.password"
        " (e.g. sasl.password=env:KAFKA_PASSWORD)"
    )


@pytest.mark.parametrize(
    ("setting", "flag"),
    [("checkpoint", "--checkpoint"), ("delta_path", "--delta-path"), ("metrics_path", "--metrics")],
)
def test_unwritable_folders_fail_at_start_up_naming_setting_and_flag(tmp_path, setting, flag):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    folders = {"checkpoint": tmp_path / "ckpt", "delta_path": tmp_path / "delta",
               "metrics_path": tmp_path / "m.jsonl", setting: blocker / "inside"}  # fmt: skip
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
    cfg = load_config(None, {"topic": "t", "checkpoint": str(tmp_path / "c" / "d"),
                             "delta_path": str(tmp_path / "delta")})  # fmt: skip
    check_writable(cfg)
    assert (tmp_path / "c" / "d").is_dir() and (tmp_path / "delta").is_dir()
    assert list((tmp_path / "c" / "d").iterdir()) == []  # the probe is gone


def test_starting_offsets_from_a_time():
    opts = source_options(JobConfig(topic="a", starting_offsets="2026-11-22T00:00:00+00:00"))
    assert opts["startingTimestamp"] == "1795305600000" and "startingOffsets" not in opts


def test_sql_flag_needs_name_and_expression():
    with pytest.raises(FilterError, match="expected NAME=EXPRESSION"):
        parse_sql_flag("just-an-expression")


def _empty_alerts(spark):
    import json

    from pyspark.sql.avro.functions import from_avro

    from alertsieve.schemas import load_rubin_schema

    empty = spark.createDataFrame([], "value binary")
    return empty.select(
        from_avro("value", json.dumps(load_rubin_schema().definition)).alias("a")
    ).select("a.*")


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("diaSource.snrr > 5", "filter 'f' (f.yaml (filters[0])): [FIELD_NOT_FOUND]"),
        ("diaSource.snr >", "filter 'f' (f.yaml (filters[0])): [PARSE_SYNTAX_ERROR]"),
        ("diaSource.snr * 2", "the expression is double, not boolean; write a condition such as"),
        (
            "diaSource.snr > (SELECT max(x) FROM t)",
            "filters[0])): sql is refused: it contains SELECT",
        ),
        ("true; DROP TABLE alerts", "sql is refused: it contains ';' (one expression"),
        ("diaSource.snr > {min_snr}", "the SQL names a parameter 'min_snr' it does not declare"),
    ],
)
def test_bad_filters_fail_before_the_stream(spark, sql, message):
    with pytest.raises(FilterError) as err:
        validate(
            [AlertFilter(name="f", sql=sql, origin="f.yaml (filters[0])")], _empty_alerts(spark)
        )
    assert message in str(err.value)


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
    f = PythonFilter(name="p", function=lambda a: a["x"] > 0,
                     columns={"x": "(SELECT max(snr) FROM t)"}, origin="p.py")  # fmt: skip
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
    from alertsieve.filtering import with_params

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
