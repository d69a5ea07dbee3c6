"""The faces of feedbackd: the command line (typer) and the merge driver that git runs. They
parse options, call one function of the application (app/), and map errors to exit codes.
"""
