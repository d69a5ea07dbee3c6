"""`feedbackd serve`: the HTTP API and the web panel, a second face of the same functions the
command line calls (loop/actions.py for writes, loop/queries.py for reads): no logic of its own.
"""
