"""Configuration: the settings read from the environment, structured logging, and the
process's heap under glibc."""
