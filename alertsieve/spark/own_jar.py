"""The project's own JVM code (``alertsieve/**/java/*.java``) compiled into a jar for Spark.

Where a stage runs once per row and Python would cost a worker round trip per batch of rows
(each object's state: ``alertsieve.stream.object_state``), it is Java, compiled against the
installed pyspark's jars by the Eclipse compiler (ecj, fetched from Maven Central like the
connectors), so a Java runtime is all the machine needs. The jar is cached under a hash of the
sources and Spark's version: a changed source or Spark builds it again, once.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
import zipfile
from pathlib import Path

from alertsieve.paths import cache_dir
from alertsieve.spark.jars import SPARK_VERSION, JarFetchError, fetch, java_executable

#: The Eclipse compiler for Java, a jar that runs on a JRE (javac needs a JDK).
ECJ = ("org.eclipse.jdt:ecj:3.40.0",)
SOURCES = Path(__file__).resolve().parents[1]


class JavaBuildError(JarFetchError):
    """Raised when the project's Java sources do not compile (the compiler's message says why)."""


def java_sources() -> list[Path]:
    return sorted(SOURCES.glob("**/java/*.java"))


def own_jar() -> Path:
    """The jar of ``java_sources()``, built on first use."""
    import pyspark

    sources = java_sources()
    digest = hashlib.sha256(SPARK_VERSION.encode() + b"".join(s.read_bytes() for s in sources))
    jar = cache_dir() / "jars" / f"alertsieve-{digest.hexdigest()[:12]}.jar"
    if jar.exists():
        return jar
    spark_jars = sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    (ecj,) = fetch(ECJ, "ecj").jars
    with tempfile.TemporaryDirectory() as classes:
        cmd = [
            java_executable(), "-jar", str(ecj), "-17", "-nowarn", "-encoding", "UTF-8",
            "-cp", os.pathsep.join(map(str, spark_jars)), "-d", classes, *map(str, sources),
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise JavaBuildError(
                f"alertsieve's Java sources did not compile:\n{proc.stdout}{proc.stderr}"
            )
        jar.parent.mkdir(parents=True, exist_ok=True)
        partial = jar.with_suffix(f".{os.getpid()}.part")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as out:
            for path in sorted(Path(classes).rglob("*.class")):
                out.write(path, path.relative_to(classes).as_posix())
        partial.replace(jar)
    return jar


def session_jars() -> list[Path]:
    """Every jar a Spark session of alertsieve loads: the connectors and alertsieve's own."""
    from alertsieve.spark.jars import spark_connector_jars

    return [*spark_connector_jars().jars, own_jar()]
