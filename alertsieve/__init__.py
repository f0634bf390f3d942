"""alertsieve: filter astronomical alert streams with Spark Structured Streaming."""
