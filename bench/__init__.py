"""Measurements run by hand, not tests."""
