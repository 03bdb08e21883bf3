"""read.py reads an Iceberg table that weir wrote, with pyiceberg or DuckDB,
and prints what the tests compare, as JSON on stdout.

    python3 read.py pyiceberg rows  CATALOG_URI WAREHOUSE NAMESPACE.TABLE
    python3 read.py duckdb    rows  METADATA_LOCATION
    python3 read.py pyiceberg count CATALOG_URI WAREHOUSE NAMESPACE.TABLE
    python3 read.py duckdb    count METADATA_LOCATION
    python3 read.py pyiceberg files CATALOG_URI WAREHOUSE NAMESPACE.TABLE

rows prints every row as a JSON object, values in a canonical text form
(decimals as their exact digits, timestamps in ISO 8601 with microseconds,
binary as base64, dates as YYYY-MM-DD), so that weir's Go test compares them
exactly with what it wrote. count prints {"count": N, "distinct": D} of the
column id. files prints the data files the current snapshot references.
A REST catalog URI is the server's http:// address. A postgres catalog URI is postgres://USER@HOST:PORT/DB with the password in
WEIR_POSTGRES_PASSWORD; a sqlite one sqlite:///path. DuckDB loads its avro
and iceberg extensions from their PyPI packages' files, offline.
"""
import base64
import datetime
import decimal
import json
import os
import sys


def canon(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, decimal.Decimal):
        return {"decimal": str(v)}
    if isinstance(v, float):
        return {"double": repr(v)}
    if isinstance(v, int):
        return {"int": str(v)}
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
            return {"timestamptz": v.isoformat(timespec="microseconds")}
        return {"timestamp": v.isoformat(timespec="microseconds")}
    if isinstance(v, datetime.date):
        return {"date": v.isoformat()}
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"binary": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        # A struct, or a map as DuckDB gives it.
        return {mapkey(k): canon(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        # pyarrow gives a map as a list of (key, value) pairs.
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
            return {mapkey(k): canon(x) for k, x in v}
        return [canon(x) for x in v]
    return {"other": repr(v)}


def mapkey(k):
    if isinstance(k, datetime.date):
        return k.isoformat()
    return str(k)


def pyiceberg_table(uri, warehouse, name):
    if uri.startswith("http://") or uri.startswith("https://"):
        from pyiceberg.catalog.rest import RestCatalog

        return RestCatalog("rest", uri=uri).load_table(name)
    from pyiceberg.catalog.sql import SqlCatalog

    if uri.startswith("postgres://") or uri.startswith("postgresql://"):
        rest = uri.split("://", 1)[1]
        user, host = rest.split("@", 1)
        pw = os.environ.get("WEIR_POSTGRES_PASSWORD", "")
        uri = "postgresql+psycopg2://%s:%s@%s" % (user, pw, host)
    elif uri.startswith("sqlite://"):
        uri = "sqlite:///" + uri[len("sqlite://"):].lstrip("/")
        uri = "sqlite:////" + uri[len("sqlite:///"):] if not uri.startswith("sqlite:////") else uri
    props = {}
    if os.environ.get("WEIR_S3_ENDPOINT"):
        # The S3 server of .ci/s3.sh, in the AWS SDKs' variables.
        props = {
            "s3.endpoint": os.environ["WEIR_S3_ENDPOINT"],
            "s3.access-key-id": os.environ.get("AWS_ACCESS_KEY_ID", ""),
            "s3.secret-access-key": os.environ.get("AWS_SECRET_ACCESS_KEY", ""),
            "s3.region": os.environ.get("AWS_REGION", "us-east-1"),
            "s3.force-virtual-addressing": "false",
        }
    cat = SqlCatalog(os.environ.get("WEIR_ICEBERG_CATALOG", "weir"), uri=uri, warehouse=warehouse, **props)
    return cat.load_table(name)


def duckdb_con():
    import duckdb
    import duckdb_extension_avro
    import duckdb_extension_iceberg

    con = duckdb.connect()
    for mod, name in ((duckdb_extension_avro, "avro"), (duckdb_extension_iceberg, "iceberg")):
        base = os.path.join(os.path.dirname(mod.__file__), "extensions")
        path = os.path.join(base, "v" + duckdb.__version__, name + ".duckdb_extension")
        if not os.path.exists(path):
            found = [os.path.join(base, d, name + ".duckdb_extension") for d in os.listdir(base)]
            path = found[0]
        con.sql("LOAD '%s'" % path.replace("'", "''"))
    return con


def main():
    reader, what = sys.argv[1], sys.argv[2]
    if reader == "pyiceberg":
        tbl = pyiceberg_table(sys.argv[3], sys.argv[4], sys.argv[5])
        if what == "files":
            files = []
            scan = tbl.scan()
            for task in scan.plan_files():
                files.append(task.file.file_path)
            print(json.dumps({"files": sorted(files)}))
            return
        arrow = tbl.scan().to_arrow()
        if what == "count":
            ids = arrow.column("id").to_pylist()
            print(json.dumps({"count": len(ids), "distinct": len(set(ids))}))
            return
        for row in arrow.to_pylist():
            print(json.dumps({k: canon(v) for k, v in row.items()}, sort_keys=True))
    elif reader == "duckdb":
        con = duckdb_con()
        loc = sys.argv[3].replace("'", "''")
        if what == "count":
            n, d = con.sql("SELECT count(*), count(DISTINCT id) FROM iceberg_scan('%s')" % loc).fetchone()
            print(json.dumps({"count": n, "distinct": d}))
            return
        rel = con.sql("SELECT * FROM iceberg_scan('%s')" % loc)
        cols = rel.columns
        for row in rel.fetchall():
            print(json.dumps({c: canon(v) for c, v in zip(cols, row)}, sort_keys=True))
    else:
        sys.exit("read.py: reader %r is neither pyiceberg nor duckdb" % reader)


if __name__ == "__main__":
    main()
