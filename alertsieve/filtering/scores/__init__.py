"""Models in the stream: a classifier's score computed once per alert and read by every filter
as ``scores.<model>`` (``scores.<model>.<output>`` for a model of several outputs).

A model is a small module beside the filters (``alertsieve.filtering.scores.model``), found like
them (``discovery``); the job runs the models its filters read, each once per alert in one pandas
UDF (``column``), loaded once per Python worker (``runtime``)."""
