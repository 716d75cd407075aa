"""`python -m mini_agent.cli`: the `mini-agent` command."""

import sys

from mini_agent.cli.main import main

sys.exit(main())
