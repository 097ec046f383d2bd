"""Configuration: the settings read from the environment, and structured logging."""
