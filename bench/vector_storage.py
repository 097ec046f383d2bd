"""`python -m bench.vector_storage`: bench/latency/vector_storage.py."""

from bench.latency.vector_storage import main

if __name__ == "__main__":
    main()
