"""What the filter costs: the fingerprint's CPU (``fingerprint``, ``hostile``), a crawl with and without it
(``crawl``, ``crawl_instructions``, ``crawl_probe``), its log lines (``log_lines``), and batch mode's and the
Spark command's pages per second (``batch``, ``spark_command``)."""
