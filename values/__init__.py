"""The ground floor: plain values the rules and the SQL share (lookup paths and bounds, hits,
scan windows, a comparison's connection settings, reason codes), and the credentials
recognised in text, which every floor that writes or shows text masks or leaves out.
Imports no other package."""
