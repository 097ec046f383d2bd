"""Sessions similar to this one: the app, its settings and its command line."""
