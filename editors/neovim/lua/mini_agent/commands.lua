--- Slash commands: the daemon's list (`agent/listCommands`), completion of a prompt that starts
--- with `/`, and showing a command's answer (`commandOutput`) in the trace.
local client = require('mini_agent.client')
local config = require('mini_agent.config')
local trace = require('mini_agent.trace')

local M = {}

---@type table<string, table[]> workspace root -> the commands its daemon listed
local listed = {}

--- The daemon's commands for `root`, asked once (bounded by client.COMPLETE_WAIT_MS) while it runs.
---@param root string
---@return {name: string, description: string?, input: {hint: string?}?}[]
function M.list(root)
  if listed[root] then
    return listed[root]
  end
  local daemon = client.get(root)
  local lsp_client = daemon and daemon.ready and vim.lsp.get_client_by_id(daemon.id)
  if not lsp_client then
    return {}
  end
  local reply = lsp_client:request_sync('agent/listCommands', vim.empty_dict(), client.COMPLETE_WAIT_MS)
  local commands = reply and reply.result and reply.result.commands
  if type(commands) ~= 'table' then
    return {}
  end
  listed[root] = commands
  return commands
end

--- Completion of a prompt: `/name` for each command the text so far starts, when it is one word
--- starting with `/`; nothing otherwise (a prompt is free text).
---@param lead string the prompt typed so far
---@return string[]
function M.complete(lead)
  if not vim.startswith(lead, '/') or lead:find('%s') then
    return {}
  end
  local out = {}
  for _, command in ipairs(M.list(config.root())) do
    local word = '/' .. tostring(command.name)
    if vim.startswith(word, lead) then
      table.insert(out, command.input and (word .. ' ') or word)
    end
  end
  table.sort(out)
  return out
end

--- Completion of :MiniAgentAsk's arguments: the commands while the arguments are one `/` word.
---@param lead string
---@param line string the whole command line
---@return string[]
function M.complete_command_line(lead, line)
  local args = line:gsub('^%s*%S+%s*', '', 1)
  if args ~= lead then
    return {}
  end
  return M.complete(lead)
end

--- The answer of a prompt that was a command: its output in the trace and, when it failed, a warning.
---@param sid string? the session the command ran in (nil when it started none)
---@param result {command: string, commandOutput: string?, ok: boolean?}
function M.show(sid, result)
  local head = ('/%s%s'):format(result.command, result.ok == false and ' failed' or '')
  local output = tostring(result.commandOutput or '')
  trace.note(sid, head .. (output ~= '' and (':\n' .. output) or ''), result.ok == false)
  if result.ok == false then
    require('mini_agent.text').notify(('mini-agent: %s: %s'):format(head, output), vim.log.levels.WARN)
  end
end

return M
