"""Exports of trainbench results to other tools' formats.

``suite/export/mlperf.py``: MLPerf Training logs (``:::MLLOG`` lines written by the official
``mlperf-logging`` package) and MLPerf system descriptions, so MLPerf's tools can read a
trainbench run. An export is a format bridge, never a claim of an MLPerf result: it is
always in the open division.
"""
