"""Record sinks that keep the stream: JSON lines on disk."""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from loadgen.records import Record


class JsonlSink:
    """Append every record to a file as one JSON object per line."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("a", encoding="utf-8")

    def __call__(self, records: list[Record]) -> None:
        """Write a batch of records."""
        self._file.writelines(json.dumps(asdict(r)) + "\n" for r in records)

    def close(self) -> None:
        """Flush and close the file."""
        self._file.close()
