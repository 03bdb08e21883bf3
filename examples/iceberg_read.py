"""Reads the table examples/iceberg.yaml writes back with DuckDB's iceberg
extension: finds its current metadata file in the SQLite catalog, then
queries it. The extensions load from their PyPI packages' files, offline:

    pip install duckdb duckdb-extension-avro duckdb-extension-iceberg
"""
import os
import sqlite3

import duckdb
import duckdb_extension_avro
import duckdb_extension_iceberg

cat = sqlite3.connect("out/lake/catalog.db")
(metadata,) = cat.execute(
    "SELECT metadata_location FROM iceberg_tables WHERE table_namespace = 'shop' AND table_name = 'orders'"
).fetchone()

con = duckdb.connect()
for mod, name in ((duckdb_extension_avro, "avro"), (duckdb_extension_iceberg, "iceberg")):
    ext = os.path.join(os.path.dirname(mod.__file__), "extensions", "v" + duckdb.__version__, name + ".duckdb_extension")
    con.sql(f"LOAD '{ext}'")
con.sql(
    f"""SELECT region, count(*) AS orders, count(DISTINCT id) AS ids, sum(qty * unit_price) AS revenue
        FROM iceberg_scan('{metadata}') GROUP BY region ORDER BY region"""
).show()
