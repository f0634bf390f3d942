"""Run scaling experiments: `alertsieve bench run`, as a script. Results go to results/<name>/
(resumable: points already measured are skipped); notebooks/04_scaling_analysis.ipynb reads them.

python jobs/run_experiment.py conf/experiments/producers.yaml [--quick] [--bootstrap HOST:PORT]
"""

import sys

from alertsieve.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "run", *sys.argv[1:]]))
