"""The long-running daemon: its main loop, threads, clocks, status file, and `run`'s entry
points."""
