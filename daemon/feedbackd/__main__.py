from feedbackd.cli import main

raise SystemExit(main())
