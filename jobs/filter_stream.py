"""The filter stream job, for spark-submit:

    spark-submit jobs/filter_stream.py --config conf/filter_stream.yaml --bootstrap HOST:PORT

Flags override the YAML; `alertsieve filter ...` is the same job without spark-submit.
"""

import sys

from alertsieve.cli import main

if __name__ == "__main__":
    sys.exit(main(["filter", *sys.argv[1:]]))
