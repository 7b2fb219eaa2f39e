"""Fault-injection suite: real worker processes, killed, stopped and cut off, against a real server.

See docs/guarantees.md for what each test proves.
"""
