import sys

from mini_agent.scripted.cli import main

sys.exit(main())
