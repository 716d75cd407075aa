--- The daemon's log: its stderr and its window/logMessage lines, in one file.
---
--- vim.lsp sends a server's stderr to the shared LSP log, mixed with every other server; on Unix the
--- daemon is started through `sh` so that its stderr is appended to this file instead.
local config = require('mini_agent.config')

local M = {}

local LEVELS = { [1] = 'ERROR', [2] = 'WARNING', [3] = 'INFO', [4] = 'LOG', [5] = 'DEBUG' }

---@return string
function M.path()
  return config.log_file()
end

--- Append lines, each with a timestamp.
---@param text string
function M.write(text)
  local path = M.path()
  vim.fn.mkdir(vim.fs.dirname(path), 'p')
  local file = io.open(path, 'a')
  if not file then
    return
  end
  local stamp = os.date('%Y-%m-%d %H:%M:%S')
  for _, line in ipairs(vim.split(text, '\n', { plain = true, trimempty = true })) do
    file:write(('[%s] %s\n'):format(stamp, line))
  end
  file:close()
end

--- Wrap a command so its stderr is appended to the log file (Unix only; elsewhere unchanged).
---@param cmd string[]
---@return string[]
function M.wrap(cmd)
  if vim.fn.has('unix') ~= 1 or vim.fn.executable('sh') ~= 1 then
    return cmd
  end
  vim.fn.mkdir(vim.fs.dirname(M.path()), 'p')
  return vim.list_extend({ 'sh', '-c', 'exec "$@" 2>>"$MINI_AGENT_LOG_FILE"', 'sh' }, cmd)
end

--- The window/logMessage handler: the message goes to the log file.
function M.on_log_message(_, params)
  if params and params.message then
    M.write(('%s %s'):format(LEVELS[params.type] or 'LOG', params.message))
  end
end

--- Open the log in a split (the user asked for it, so it takes focus).
function M.open()
  local path = M.path()
  if vim.fn.filereadable(path) == 0 then
    vim.notify('mini-agent: no log yet at ' .. path, vim.log.levels.INFO)
    return
  end
  vim.cmd('botright split ' .. vim.fn.fnameescape(path))
  vim.bo.readonly = true
  vim.bo.autoread = true
  vim.cmd('normal! G')
end

return M
