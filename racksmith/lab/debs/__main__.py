import sys

from racksmith.lab.debs.serve import main

sys.exit(main())
