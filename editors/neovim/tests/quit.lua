-- Quit Neovim while the daemon runs with tools registered, as a user does: no stop() first.
-- tests/e2e/editors/test_neovim.py then checks that the daemon is gone and that the log shows it exiting cleanly.
local h = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

h.run(function()
  h.load_plugin()
  -- the wait is bounded for users (1 s); here it only has to outlast a slow test machine
  require('mini_agent.client').QUIT_WAIT_MS = 20000
  require('mini_agent').setup({ cmd = h.daemon_cmd(), llm = { baseUrl = h.base_url, model = 'replay' } })
  local events = h.record_events({ 'MiniAgentToolsChanged' })
  vim.cmd('MiniAgentRegister tools.py')
  h.wait('the tools to register', function()
    return h.count(events, 'MiniAgentToolsChanged') > 0
  end)
  h.eq(1, #require('mini_agent.client').running(), 'running daemons')
end, { quit_running = true })
