"""Offline data: env runners record to Parquet files (`OfflineWriter`), algorithms read them (`OfflineData`).

See docs/concepts/offline.md. The modules import pyarrow (the `offline` extra), so nothing here is
imported until a config records (`offline_data(output=...)`) or reads (`offline_data(input_=...)`).
"""
