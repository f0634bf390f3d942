"""The filter stream job, for spark-submit (`make setup` installs it as .venv/bin/spark-submit):

    .venv/bin/spark-submit jobs/filter_stream.py --config conf/filter_stream.yaml --bootstrap HOST:PORT

Flags override the YAML; `alertsieve filter ...` is the same job without spark-submit.
"""

import sys

try:
    from alertsieve.cli import main
except ModuleNotFoundError as e:  # spark-submit ran a Python without the project installed
    sys.exit(
        f"jobs/filter_stream.py: {e.name} cannot be imported by {sys.executable}. Run `make setup`,"
        " then `.venv/bin/spark-submit jobs/filter_stream.py ...` (it runs the project's Python"
        " with or without the venv activated), or set spark.pyspark.driver.python to a Python"
        " that has alertsieve installed."
    )

if __name__ == "__main__":
    sys.exit(main(["filter", *sys.argv[1:]]))
