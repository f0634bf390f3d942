"""Fetch Java artifacts (the Kafka broker, Spark's connectors) from Maven Central without Maven.

Apache Ivy does it (pyspark ships it; before pyspark is installed it is fetched from Maven Central
itself): one resolution per artifact set, retrieved into a folder of plain jars under the user cache.
A manifest written after a successful retrieval makes later calls free (no JVM start, no network).
``python -m alertsieve.spark.jars`` fetches both sets at once and needs nothing but Java and the
standard library, so ``make setup`` runs it beside the Python install.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path
from xml.sax.saxutils import quoteattr

from alertsieve.errors import AlertsieveError
from alertsieve.paths import cache_dir

KAFKA_VERSION = "4.1.2"
SPARK_VERSION = "4.2.0"
#: Spark's connector modules (Avro, the Kafka token provider) at Spark's own version; through
#: 4.1 they stopped at 4.1.1 on Maven Central as reachable here, behind spark-sql-kafka's 4.1.3.
SPARK_AVRO_VERSION = SPARK_VERSION
SCALA_BINARY = "2.13"
#: Delta's jar for Spark 4.2 (delta-spark_4.2), the same version as its Python package (4.4.0
#: allows pyspark 4.2.0; 4.4.1's jar is not on Maven Central as reachable here).
DELTA_VERSION = "4.4.0"

KAFKA_BROKER = (
    f"org.apache.kafka:kafka_{SCALA_BINARY}:{KAFKA_VERSION}",
    # Kafka logs through slf4j 1.x; without a binding the broker's own log would be empty.
    "org.apache.logging.log4j:log4j-slf4j-impl:2.25.3",
)
SPARK_CONNECTORS = (
    f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_BINARY}:{SPARK_VERSION}",
    f"org.apache.spark:spark-avro_{SCALA_BINARY}:{SPARK_AVRO_VERSION}",
    f"io.delta:delta-spark_4.2_{SCALA_BINARY}:{DELTA_VERSION}",
)
#: Transitive versions pinned over what the POMs ask for (see SPARK_AVRO_VERSION).
SPARK_OVERRIDES = (
    f"org.apache.spark:spark-token-provider-kafka-0-10_{SCALA_BINARY}:{SPARK_AVRO_VERSION}",
)


class JarFetchError(AlertsieveError, RuntimeError):
    """Raised when Ivy cannot resolve or download an artifact set."""


@dataclass(frozen=True)
class JarSet:
    """A resolved set of jars and whether this call had to download them."""

    jars: tuple[Path, ...]
    downloaded: bool
    seconds: float

    @property
    def classpath(self) -> str:
        return ":".join(str(j) for j in self.jars)


#: The Ivy that fetches jars before pyspark (which ships it) is installed, and its SHA-1 as Maven
#: Central publishes it.
IVY = ("org/apache/ivy/ivy/2.5.3/ivy-2.5.3.jar", "163b4d6b330cd4590a05f3e97a6eb8bf5b54665e")
MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"


def ivy_jar() -> Path:
    """pyspark's Ivy jar, or without pyspark one fetched from Maven Central (checked)."""
    try:
        import pyspark
    except ImportError:
        return _downloaded_ivy()
    found = sorted((Path(pyspark.__file__).parent / "jars").glob("ivy-*.jar"))
    if not found:
        raise JarFetchError("pyspark's bundled Ivy jar is missing: reinstall pyspark (make setup)")
    return found[-1]


def _downloaded_ivy() -> Path:
    import urllib.request

    path, sha1 = IVY
    target = cache_dir() / "ivy" / Path(path).name
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(MAVEN_CENTRAL + path, timeout=60) as response:
            data = response.read()
    except OSError as e:
        raise JarFetchError(f"could not fetch Apache Ivy from {MAVEN_CENTRAL}: {e}") from e
    if hashlib.sha1(data).hexdigest() != sha1:
        raise JarFetchError(f"{MAVEN_CENTRAL}{path} does not have the SHA-1 Maven Central states")
    partial = target.with_suffix(".part")
    partial.write_bytes(data)
    partial.rename(target)
    return target


def java_executable() -> str:
    """The java binary, preferring JAVA_HOME, as Spark and Kafka's own scripts do."""
    import os

    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise JarFetchError(
            "Java not found: install a Java 17+ runtime (e.g. apt-get install openjdk-17-jre-headless)"
            " or set JAVA_HOME"
        )
    return found


def _ivy_module(coordinates: tuple[str, ...], overrides: tuple[str, ...] = ()) -> str:
    deps = []
    for coord in coordinates:
        org, name, rev = coord.split(":")
        deps.append(
            f"<dependency org={quoteattr(org)} name={quoteattr(name)} rev={quoteattr(rev)}"
            ' conf="default->default"/>'
        )
    for coord in overrides:
        org, name, rev = coord.split(":")
        deps.append(
            f"<override org={quoteattr(org)} module={quoteattr(name)} rev={quoteattr(rev)}/>"
        )
    return (
        '<ivy-module version="2.0"><info organisation="alertsieve" module="deps"/>'
        '<configurations><conf name="default"/></configurations>'
        f"<dependencies>{''.join(deps)}</dependencies></ivy-module>"
    )


def _provided_by_pyspark() -> set[str]:
    """Artifact names pyspark already ships: a second copy (often older, e.g. jackson 2.13)
    on the driver's classpath would shadow Spark's own and break it in odd ways."""
    import pyspark

    names = set()
    for jar in (Path(pyspark.__file__).parent / "jars").glob("*.jar"):
        parts = jar.stem.split("-")
        cut = next((i for i, p in enumerate(parts) if i and p[:1].isdigit()), len(parts))
        names.add("-".join(parts[:cut]))
    return names


def fetch(
    coordinates: tuple[str, ...],
    name: str,
    refresh: bool = False,
    overrides: tuple[str, ...] = (),
) -> JarSet:
    """Resolve ``coordinates`` (group:artifact:version) and their runtime dependencies,
    pinning transitive ones to ``overrides``.

    The folder is keyed by a hash of the coordinates, so changing a version never mixes jars;
    each set has an Ivy cache of its own, so two sets resolve at the same time.
    """
    key = hashlib.sha256("\n".join(coordinates + overrides).encode()).hexdigest()[:12]
    target = cache_dir() / "jars" / f"{name}-{key}"
    manifest = target / "manifest.json"
    start = time.monotonic()
    if manifest.exists() and not refresh:
        jars = tuple(target / j for j in json.loads(manifest.read_text())["jars"])
        if all(j.exists() for j in jars):
            return JarSet(jars, downloaded=False, seconds=time.monotonic() - start)
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    ivy_xml = target / "ivy.xml"
    ivy_xml.write_text(_ivy_module(coordinates, overrides))
    cmd = [
        java_executable(),
        "-jar",
        str(ivy_jar()),
        "-ivy",
        str(ivy_xml),
        "-cache",
        str(cache_dir() / "ivy-cache" / name),
        "-confs",
        "default",
        "-retrieve",
        str(target / "[artifact]/[artifact]-[revision](-[classifier]).[ext]"),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    jars = tuple(sorted(target.glob("*/*.jar")))
    if proc.returncode != 0 or not jars:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        shutil.rmtree(target, ignore_errors=True)
        raise JarFetchError(
            f"could not fetch {', '.join(coordinates)} from Maven Central (is the network or a"
            f" proxy reachable? Ivy settings can be given via ~/.ivy2): \n{tail}"
        )
    manifest.write_text(
        json.dumps({"coordinates": coordinates, "jars": [str(j.relative_to(target)) for j in jars]})
    )
    return JarSet(jars, downloaded=True, seconds=time.monotonic() - start)


def kafka_broker_jars(refresh: bool = False) -> JarSet:
    return fetch(KAFKA_BROKER, "kafka-broker", refresh)


def spark_connector_jars(refresh: bool = False) -> JarSet:
    """The connectors and what they need that pyspark does not ship (see _provided_by_pyspark)."""
    found = fetch(SPARK_CONNECTORS, "spark-connectors", refresh, SPARK_OVERRIDES)
    provided = _provided_by_pyspark()
    return replace(found, jars=tuple(j for j in found.jars if j.parent.name not in provided))


def prefetch() -> list[JarSet]:
    """Both jar sets, resolved at the same time (each is a chain of small requests: waiting,
    not bandwidth)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        broker = pool.submit(fetch, KAFKA_BROKER, "kafka-broker")
        connectors = pool.submit(
            fetch, SPARK_CONNECTORS, "spark-connectors", False, SPARK_OVERRIDES
        )
        return [broker.result(), connectors.result()]


if __name__ == "__main__":
    for jar_set in prefetch():
        verb = "downloaded" if jar_set.downloaded else "cached"
        print(f"{len(jar_set.jars)} jars ({verb}, {jar_set.seconds:.1f}s)")
