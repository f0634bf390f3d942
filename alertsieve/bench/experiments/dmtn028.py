"""DMTN-028's published numbers, to read our curves against.

Source: M. T. Patterson, "DMTN-028: Benchmarking a distribution system for LSST alerts"
(2018-03-29), https://dmtn-028.lsst.io, text of lsst-dm/dmtn-028 ``index.rst``. Testbed: Kafka
and Zookeeper (Confluent Platform 3.2.0) in Docker Swarm on AWS; the consumer and partition
studies on 3 m4.16xlarge managers + 10 m4.4xlarge workers; 136 KB alerts (two 90 KB FITS
stamps of 30x30 pixels, no history); consumers apply "a very simple filter". Producing time =
serialize + send a visit; consuming time = last alert sent -> read to the end of the partition.

Only the summary table has numbers per configuration; the volume and producer studies give a
few numbers in the text (kept in ``TEXT``) and the rest in figures.
"""

from __future__ import annotations

#: The summary table, "ordered from the smallest total alert distribution duration to largest";
#: 10,000 alerts per visit. Times in seconds (mean, standard deviation).
SUMMARY = [
    # producers, consumers, partitions, producing (mean, sd), consuming (mean, sd)
    (100, 11, 10, (3.75, 1.30), (10.8, 3.52)),
    (10, 2, 1, (7.46, 0.23), (11.0, 2.0)),
    (100, 2, 1, (5.9, 1.3), (14.9, 1.3)),
    (10, 4, 1, (6.26, 0.93), (17.91, 3.33)),
    (10, 6, 1, (7.15, 1.34), (21.14, 2.17)),
    (1, 2, 1, (33.1, 2.02), (0.16, 0.23)),
    (10, 11, 1, (8.82, 2.41), (2068.0, 1131.0)),
]

#: Numbers given in the text, quoted.
TEXT = {
    "volume": [
        "100 alerts takes about 1 second to serialize and send to Kafka, 1,000 alerts takes "
        "about 3-4 seconds, and 10,000 alerts takes about 28-33 seconds for a single producer.",
        "For all experiments, the transport time is low, between 0.10 - 0.30 seconds.",
    ],
    "producers": [
        "One producer serializing 100 alerts takes 1.29 +/- 0.06 seconds, whereas 100 producers "
        "serializing and sending 100 alerts each to Kafka takes 5.9 +/- 1.3 seconds.",
        "For 200 producers with 50 alerts each with stamps, the average transit time increases "
        "to 22.6 seconds.",
    ],
    "consumers": [
        "Producing time increases slightly and near linearly to 9 seconds (10 producers, "
        "2 to 10+1 consumers); with 10+1 consumers and stamps the consumers could not keep up.",
    ],
    "partitions": [
        "With 10 partitions and the same number of consumer groups, the transit time of the "
        "consumer reading alerts from the Kafka queue is ~11 seconds.",
    ],
}

#: DMTN-028's single-producer volume curve (text above): alerts per visit -> producing seconds.
VOLUME_ONE_PRODUCER = {100: (1.0, 1.0), 1_000: (3.0, 4.0), 10_000: (28.0, 33.0)}


def summary_table():
    """The summary table as a DataFrame (seconds), with the total as published."""
    import pandas as pd

    rows = [
        {
            "producers": p,
            "consumers": c,
            "partitions": k,
            "producing_s": prod[0],
            "producing_sd": prod[1],
            "consuming_s": cons[0],
            "consuming_sd": cons[1],
            "total_s": round(prod[0] + cons[0], 2),
        }
        for p, c, k, prod, cons in SUMMARY
    ]
    return pd.DataFrame(rows)
