import sys

from edgebench.fleet.cli import main

sys.exit(main())
