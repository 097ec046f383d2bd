"""What every kind of benchmark shares: where it writes, its own databases, and timing."""
