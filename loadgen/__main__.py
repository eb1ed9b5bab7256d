"""python -m loadgen."""
import sys

from loadgen.cli import main

sys.exit(main())
