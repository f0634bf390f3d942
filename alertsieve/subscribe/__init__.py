"""The subscriber's side of the filter job: read a filter's output topic, decode what it carries
(the original alert or a compact ``fields`` record), save it (JSON lines, Parquet, FITS cutouts)
and check against the job's counts topic that nothing was lost.

Modules: ``records`` (decode one Kafka record), ``identity`` (the object, position and time of
a match), ``once`` (each match once, once per object: pure), ``state`` (what a restart resumes
from), ``writers`` (JSON lines and Parquet), ``senders`` (webhooks and mail), ``cutouts`` (FITS
stamps), ``verify`` (received vs counted, a pure function) and ``subscriber`` (the Kafka
consumer); the command, ``alertsieve listen``, is ``alertsieve.cli.listen``.
"""

from alertsieve.subscribe.errors import SubscribeError

__all__ = ["SubscribeError"]
