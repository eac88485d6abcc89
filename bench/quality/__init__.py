"""What the filter decides: false drops, recall and precision on labelled pairs (``detection``), real sites
decided page after page (``real_sites``, with the sites ``built_sites`` makes and the pairs of ``sets``), and
requests spent on crawl traps (``traps``)."""
