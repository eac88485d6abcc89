"""How far a batch run is, on the terminal: a bar with the input's size and an estimate of the time left,
messages printed above it; when stderr is not a terminal (a log file, a pipe), a plain line now and then."""

from __future__ import annotations

import sys
import time
from typing import IO, Any

from ..extras import installed

#: Seconds between the plain lines written when stderr is not a terminal.
PLAIN_EVERY = 60.0


class ProgressBar:
    """Shows ``read`` bytes of ``total`` (the inputs' size) and the pages read, on ``stream``."""

    def __init__(self, total: int, stream: IO[str] = sys.stderr, enabled: bool = True) -> None:
        self.total = total
        self.stream = stream
        self.enabled = enabled
        self._bar: Any = None
        self._pages = 0
        self._started = self._last_line = time.monotonic()
        if enabled and stream.isatty() and installed("tqdm"):  # (the [warc] extra's; plain lines without it)
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                file=stream,
                mininterval=0.5,
                dynamic_ncols=True,
            )

    def advance(self, read: int, pages: int) -> None:
        """The inputs are read up to byte ``read``, ``pages`` pages so far."""
        self._pages = pages
        if self._bar is not None:
            self._bar.update(read - self._bar.n)
            self._bar.set_postfix_str(f"{pages:,} pages", refresh=False)
        elif self.enabled and time.monotonic() - self._last_line >= PLAIN_EVERY:
            self._last_line = time.monotonic()
            share = f", {read / self.total:.0%} of the input" if self.total else ""
            rate = pages / max(time.monotonic() - self._started, 1e-9)
            self.say(f"{pages:,} pages read{share}, {rate:,.0f} pages/s")

    def say(self, message: str) -> None:
        """One line, above the bar if there is one."""
        line = f"simhash-dedup: {message}"
        if self._bar is not None:
            self._bar.write(line, file=self.stream)
        else:
            print(line, file=self.stream, flush=True)

    def finish(self) -> None:
        """Every input read."""
        self.advance(self.total, self._pages)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
