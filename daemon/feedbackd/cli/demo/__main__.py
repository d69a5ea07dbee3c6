import sys

from feedbackd.cli.demo.build import main

raise SystemExit(main(sys.argv[1:]))
