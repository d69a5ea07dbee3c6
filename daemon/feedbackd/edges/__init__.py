"""One module per outside system: git, the file system, the watcher, SQLite, the systemd notify
socket, outside processes, the instance lock, the clock, randomness.
"""
