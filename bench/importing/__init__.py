"""The import run, `python -m bench.importing`: a large import file against the floor of a raw
COPY and one HNSW build."""
