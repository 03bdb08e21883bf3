#!/usr/bin/env python3
"""Read an exactly-once file sink's directory the way docs/file-connectors.md
tells a reader outside weir to, and count the records by id.

A reader counts every file under the directory whose name, and the names of
whose directories below it, do not start with a dot, and that ends with a
chunk's extension (.ndjson, .txt, optionally .gz or .zst; .parquet). Nothing
else is data: hidden files are chunks being written or the manifest.

Usage: read_chunks.py DIR N MOD
Expected ids: 0 <= id < N with id % MOD != 0 (MOD 0: every id).
Prints one JSON object: records, distinct, duplicates, missing, unexpected,
chunks, and the first few duplicated or missing ids.
"""
import gzip
import json
import os
import sys

EXTS = (".ndjson", ".ndjson.gz", ".txt", ".txt.gz")


def chunks(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if name.startswith("."):
                continue
            if name.endswith(".zst") or name.endswith(".parquet"):
                raise SystemExit("this reader reads ndjson and gzip only: " + name)
            if name.endswith(EXTS):
                yield os.path.join(dirpath, name)


def main():
    root, n, mod = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    counts = {}
    records = files = 0
    for path in chunks(root):
        files += 1
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            for line in f:
                rec = json.loads(line)
                i = rec["id"]
                counts[i] = counts.get(i, 0) + 1
                records += 1
    want = lambda i: 0 <= i < n and (mod == 0 or i % mod != 0)
    dups = sorted(i for i, c in counts.items() if c > 1)
    missing = [i for i in range(n) if want(i) and i not in counts]
    unexpected = sorted(i for i in counts if not want(i))
    print(json.dumps({
        "records": records,
        "distinct": len(counts),
        "chunks": files,
        "duplicates": sum(c - 1 for c in counts.values() if c > 1),
        "missing": len(missing),
        "unexpected": len(unexpected),
        "first_duplicates": dups[:5],
        "first_missing": missing[:5],
    }))


if __name__ == "__main__":
    main()
