"""A warm session for a filter author's loop: ``backtest``, ``filters check`` and ``filters diff``
sent to a long-lived process that keeps its JVM, SparkSession and imports between commands.

A cold command pays a JVM, a session and the library's imports (some 20 s on 2 cores) before it
reads an alert; the warm process pays them once. The first such command starts it (``server``),
later ones hand it their arguments over a Unix socket (``client``) and print what it answers;
it stops itself after a while idle, or with ``alertsieve warm stop``.
"""
