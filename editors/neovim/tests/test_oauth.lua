-- An MCP server behind OAuth (tests/support/oauth_mcp_server.py, started by the runner, its URL in
-- $MINI_AGENT_TEST_OAUTH_URL), named in the workspace file: the first call of its tool makes the daemon
-- ask the plugin to open the sign-in page (window/showDocument, external). Neovim's own handler opens
-- it with vim.ui.open; here vim.ui.open launches the person's "browser" (curl following redirects, in
-- the background, as xdg-open hands a link to a browser). The authorization server approves at once and
-- redirects to the daemon's loopback listener, the sign-in completes, and the tool runs: the answer says
-- "signed in" and the token is stored in the user's state folder.
local h = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

local URL = vim.env.MINI_AGENT_TEST_OAUTH_URL
local STATE = vim.env.MINI_AGENT_STATE_DIR
local PAGE = h.root .. '/../browser-page.html'

h.run(function()
  assert(URL and URL ~= '', 'the runner set no MINI_AGENT_TEST_OAUTH_URL')
  assert(STATE and STATE ~= '', 'the runner set no MINI_AGENT_STATE_DIR')
  vim.fn.writefile({
    '[tool.mini-agent]',
    '[[tool.mini-agent.mcp_servers]]',
    'type = "http"',
    'name = "oauth"',
    ('url = %q'):format(URL),
    'requires_approval = false',
  }, h.root .. '/pyproject.toml')
  h.load_plugin()
  require('mini_agent').setup({
    cmd = h.daemon_cmd(),
    llm = { baseUrl = h.base_url, model = 'replay' },
    trust_workspace = true,
  })

  -- what reaches Neovim's built-in window/showDocument handler, which then runs as it is
  local shown = {}
  local builtin = vim.lsp.handlers['window/showDocument']
  vim.lsp.handlers['window/showDocument'] = function(err, params, ctx, config)
    table.insert(shown, params)
    return builtin(err, params, ctx, config)
  end
  local opened = {}
  vim.ui.open = function(uri)
    table.insert(opened, uri)
    local browser = 'curl -sSL --max-time 30 -o "$2" "$1" </dev/null >/dev/null 2>&1 &'
    return vim.system({ 'sh', '-c', browser, 'sh', uri, PAGE })
  end

  local result
  require('mini_agent').ask('Who am I?', {
    on_done = function(err, res)
      result = { err = err, res = res }
    end,
  })
  h.wait('the session to end', function()
    return result ~= nil
  end, 40000)
  assert(not result.err, vim.inspect(result.err))

  h.eq(1, #shown, 'window/showDocument requests')
  h.eq(true, shown[1].external, 'the page is opened outside Neovim')
  local authorize = URL:gsub('/mcp$', '') .. '/authorize?'
  h.eq(authorize, shown[1].uri:sub(1, #authorize), 'the sign-in page is the authorization URL')
  h.eq({ shown[1].uri }, opened, 'pages handed to vim.ui.open')
  h.find(table.concat(vim.fn.readfile(PAGE), '\n'), 'Signed in')
  h.find(result.res.finalAnswer or '', 'signed in')
  local tokens = vim.fn.glob(STATE .. '/mcp-oauth/*', false, true)
  h.eq(1, #tokens, 'token files in ' .. STATE .. '/mcp-oauth')
  h.eq(nil, vim.fs.find('mcp-oauth', { path = h.root, limit = 1 })[1], 'a token folder in the workspace')

  local daemon = require('mini_agent.client').get(h.root)
  local client = vim.lsp.get_client_by_id(daemon.id)
  h.eq(true, client.capabilities.window.showDocument.support, 'window/showDocument support announced')
end)
