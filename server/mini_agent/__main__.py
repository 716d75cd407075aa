"""`python -m mini_agent` serves the daemon on stdio."""

from .boot import main

main()
