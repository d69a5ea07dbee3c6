import sys

from feedbackd.cli.demo.workspace import main

raise SystemExit(main(sys.argv[1:]))
