from feedbackd.cli.launch import main

raise SystemExit(main())
