"""`python -m mini_agent` serves the daemon on stdio (LSP framing); `python -m mini_agent acp` serves
the Agent Client Protocol instead (one JSON message per line)."""

import sys

if sys.argv[1:2] == ["acp"]:
    from mini_agent.acp import main as acp_main

    acp_main(sys.argv[2:])
else:
    from mini_agent.lsp.boot import main

    main()
