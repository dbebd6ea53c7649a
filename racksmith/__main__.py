from racksmith.cli import main

raise SystemExit(main())
