"""The ground floor: plain values the rules and the SQL share (lookup paths and bounds, hits,
scan windows, a comparison's connection settings, reason codes). Imports no other package."""
