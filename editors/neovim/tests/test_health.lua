-- :checkhealth mini_agent starts the daemon for real and reports it; a command that does not exist
-- is reported as an error, by :checkhealth and by an ask (with the log's last lines).
local h = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

local function checkhealth()
  vim.cmd('checkhealth mini_agent')
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  vim.cmd('bwipeout!')
  return text
end

h.run(function()
  h.load_plugin()
  -- python itself, not h.daemon_cmd()'s shell: the report names the Python the command runs
  local cmd = { h.python, '-m', 'mini_agent' }
  require('mini_agent').setup({ cmd = cmd, llm = { baseUrl = h.base_url, model = 'replay' } })
  local report = checkhealth()
  h.in_order(report, {
    'OK Neovim 0.',
    'OK options are valid',
    'OK command: ' .. h.python,
    'OK the daemon starts and answers initialize: mini-agent',
    'protocol v1',
    'OK tool sandbox: on (',
    'OK Python 3.',
    'model: replay',
  })
  assert(not report:find('ERROR', 1, true), report)

  require('mini_agent').setup({ cmd = { h.root .. '/no-such-daemon', 'serve' } })
  h.find(checkhealth(), 'ERROR ' .. h.root .. '/no-such-daemon is not executable')

  local result
  require('mini_agent').ask('anything', {
    on_done = function(err)
      result = err
    end,
  })
  h.wait('the failed start to be reported', function()
    return result ~= nil
  end)
  h.find(result.message, 'exited')
  h.find(result.message, 'no-such-daemon')
end)
