"""`python -m mini_agent` serves the daemon on stdio."""

from .server import main

main()
