"""Send simulated Rubin visits (or replayed Avro files) to Kafka: `alertsieve produce`, as a script.

python jobs/produce_alerts.py --bootstrap 127.0.0.1:9092 --topic alerts --visits 3 --interval 0
"""

import sys

from alertsieve.cli import main

if __name__ == "__main__":
    sys.exit(main(["produce", *sys.argv[1:]]))
