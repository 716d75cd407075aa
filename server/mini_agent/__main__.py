"""`python -m mini_agent` serves the daemon on stdio (LSP framing); `python -m mini_agent acp` serves
the Agent Client Protocol instead (one JSON message per line); `python -m mini_agent setup` is
`mini-agent setup`, the model server's set-up (what ACP's terminal sign-in runs)."""

import sys

if sys.argv[1:2] == ["acp"]:
    from mini_agent.acp import main as acp_main

    acp_main(sys.argv[2:])
elif sys.argv[1:2] == ["setup"]:
    from mini_agent.cli.main import main as cli_main

    sys.exit(cli_main(sys.argv[1:]))
else:
    from mini_agent.lsp.boot import main

    main()
