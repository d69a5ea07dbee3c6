"""`feedbackd serve`: the HTTP API and the web panel, a second face of the same functions the
command line calls (app/commands/actions.py for writes, app/commands/queries.py for reads): no
logic of its own.
"""
