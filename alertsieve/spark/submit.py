"""spark-submit from this environment, with nothing to remember: `make setup` writes pyspark's
spark-defaults.conf (connector jars, this interpreter for driver and workers, the project's log4j2
configuration) and points pip's ``find-spark-home`` at this interpreter, so
``.venv/bin/spark-submit jobs/filter_stream.py`` works with or without the venv activated."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from alertsieve.spark.own_jar import session_jars

#: The log4j2 configuration every Spark JVM of this environment uses (shipped in the package).
LOG4J2 = Path(__file__).with_name("log4j2.properties")

#: Avro's "fast" reader (on by default since Avro 1.10) keeps a reader per schema object in a
#: cache whose entries hold their own keys, so none is ever freed (AVRO-4253), and Spark's
#: ``from_avro`` parses its schema again in every task: a Real-Time Mode job's heap grows by the
#: schemas of every epoch, for as long as it runs (docs/reliability.md, docs/benchmarks.md).
AVRO_PLAIN_READER = "-Dorg.apache.avro.fastread=false"


#: HotSpot leaves any method over 8,000 bytes of bytecode to its interpreter, and the method
#: Spark generates for a job's filters grows with them: a broadcast join of 10,000 alerts with
#: 2,000 filters' constants in 200 shapes ran 15 s a batch without this option, 1.2 s with it
#: (``alertsieve.stream.shaped``).
COMPILE_HUGE_METHODS = "-XX:-DontCompileHugeMethods"


def java_options() -> str:
    """The Java options of every Spark JVM (driver and executors) of this environment."""
    return f"-Dlog4j2.configurationFile=file:{LOG4J2} {AVRO_PLAIN_READER} {COMPILE_HUGE_METHODS}"


def spark_defaults_file() -> Path:
    """The spark-defaults.conf that pip-installed pyspark's spark-submit reads."""
    import pyspark

    conf_dir = os.environ.get("SPARK_CONF_DIR")
    return Path(conf_dir or Path(pyspark.__file__).parent / "conf") / "spark-defaults.conf"


def submit_defaults() -> dict[str, str]:
    """What spark-submit and every session started from Python get unless told otherwise."""
    return {
        "spark.jars": ",".join(str(j) for j in session_jars()),
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.driver.extraJavaOptions": java_options(),
        "spark.executor.extraJavaOptions": java_options(),
    }


def install_spark_defaults() -> Path:
    """Write :func:`submit_defaults` into spark-defaults.conf. Lines we did not write are kept."""
    path = spark_defaults_file()
    ours = submit_defaults()
    kept = []
    if path.exists():
        kept = [ln for ln in path.read_text().splitlines() if ln.split(" ", 1)[0] not in ours]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([*kept, *(f"{k} {v}" for k, v in ours.items())]) + "\n")
    return path


def use_this_interpreter_for_spark_home() -> Path | None:
    """pip's ``find-spark-home`` runs ``python3`` from PATH to locate pyspark: outside an
    activated venv that is the system Python, which has no pyspark, and spark-submit dies with
    ``'NoneType' object has no attribute 'origin'``. Make it run this interpreter instead.
    Returns the script changed, or None where pip put no such script (conda, a Spark install)."""
    script = Path(sys.executable).parent / "find-spark-home"
    if not script.is_file():
        return None
    text = script.read_text()
    fixed = text.replace(
        '"${PYSPARK_PYTHON:-"python3"}"', f'"${{PYSPARK_PYTHON:-"{sys.executable}"}}"'
    )
    if fixed != text:
        script.write_text(fixed)
    return script
