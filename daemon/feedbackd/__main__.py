from feedbackd.launch import main

raise SystemExit(main())
