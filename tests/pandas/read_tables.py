"""Reads every CSV file of a directory written by `gpuprof report --format csv -o DIR`
with pandas.read_csv, as a user loads them, and prints what pandas saw as JSON:
per table its columns and row count, and for the kernel tables the values the test
compares with the JSON report.

usage: python read_tables.py DIR
"""

import json
import pathlib
import sys

import pandas


def main() -> None:
    out = {}
    for path in sorted(pathlib.Path(sys.argv[1]).glob("*.csv")):
        df = pandas.read_csv(path, keep_default_na=False, na_values=[""])
        table = {"columns": list(df.columns), "rows": len(df)}
        if path.stem == "kernels":
            table["total_ns"] = int(df["total_ns"].sum())
            table["median_ns"] = {
                m: int(v) for m, v in zip(df["mangled"].fillna(""), df["median_ns"])
            }
            table["stddev_ns"] = {
                m: float(v) for m, v in zip(df["mangled"].fillna(""), df["stddev_ns"])
            }
        if path.stem == "kernel_configs":
            table["calls"] = int(df["calls"].sum())
        out[path.stem] = table
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
