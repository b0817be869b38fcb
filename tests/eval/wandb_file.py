"""What an offline W&B run recorded: its run-*.wandb file read back (records of the wandb proto)."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from wandb.proto import wandb_internal_pb2

HEADER = b":W&B" + struct.pack("<HB", 0xBEE1, 0)
BLOCK = 32 * 1024
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
# Generated protobuf code, without type stubs.
RECORD: Any = wandb_internal_pb2.Record  # type: ignore[attr-defined]


def records(path: Path) -> list[Any]:
    """Every record of the file: LevelDB's log format (32 KiB blocks of chunks, each with a
    4-byte checksum, a 2-byte length and a type) after W&B's 7-byte header."""
    data = path.read_bytes()
    assert data.startswith(HEADER), "not a W&B run file"
    found: list[Any] = []
    position, pending = len(HEADER), b""
    while position + 7 <= len(data):
        left = BLOCK - position % BLOCK
        if left < 7:  # a block's tail too short for a chunk header is padding
            position += left
            continue
        length, kind = struct.unpack_from("<HB", data, position + 4)
        chunk = data[position + 7 : position + 7 + length]
        position += 7 + length
        if kind == 0 and length == 0:
            continue
        pending = chunk if kind in (FULL, FIRST) else pending + chunk
        if kind in (FULL, LAST):
            record = RECORD()
            record.ParseFromString(pending)
            found.append(record)
    return found


def summary(path: Path) -> dict[str, Any]:
    """The run's summary as its summary records left it."""
    values: dict[str, Any] = {}
    for record in records(path):
        if record.WhichOneof("record_type") == "summary":
            for item in record.summary.update:
                key = item.key or "/".join(item.nested_key)
                values[key] = json.loads(item.value_json)
    return values
