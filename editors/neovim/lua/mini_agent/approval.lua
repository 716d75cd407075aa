--- Approvals: the `agent/requestPermission` handler and the choice put to the user.
---
--- vim.lsp runs a server request's handler inside a coroutine, so the handler yields until the user
--- has chosen (vim.ui.select may answer at once, as the built-in one does, or much later, as pickers
--- do) and then returns the decision as the response. Outside a coroutine it answers "no decision"
--- at once and sends the choice with agent/approve, which the daemon accepts just the same.
local trace = require('mini_agent.trace')

local M = {}

--- ACP's option kinds, used when the daemon sends none.
M.DEFAULT_OPTIONS = {
  { optionId = 'allow_once', name = 'Allow once', kind = 'allow_once' },
  { optionId = 'allow_always', name = 'Always allow this tool in this session', kind = 'allow_always' },
  { optionId = 'reject_once', name = 'Reject', kind = 'reject_once' },
  { optionId = 'reject_always', name = 'Always reject this tool in this session', kind = 'reject_always' },
}

local DISMISSED = 'dismissed in the editor'

local ALLOWED = {
  allow_once = '✓ allowed once',
  allow_always = '✓ allowed for this session',
  allow_once_expanded = '✓ allowed once, beyond the sandbox',
}
local REJECTED = { reject_once = 'rejected', reject_always = 'rejected for this session' }

--- Ask which decision to take for a tool call; a dismissed prompt counts as "reject once".
---@param call table the ToolCall
---@param options table[]? the daemon's options
---@param callback fun(decision: string, reason: string?)
function M.choose(call, options, callback)
  local prompt = ('mini-agent wants to run %s %s'):format(call.name or '?', trace.arguments(call))
  require('mini_agent.text').select(options or M.DEFAULT_OPTIONS, {
    prompt = prompt,
    kind = 'mini_agent.permission',
    format_item = function(option)
      return option.name or option.optionId
    end,
  }, function(choice)
    if choice then
      callback(choice.optionId or choice.kind)
    else
      callback('reject_once', DISMISSED)
    end
  end)
end

--- An allowed call gets a line now, before its output; a rejected one is said once, on its observation.
local function record(sid, call, decision)
  if REJECTED[decision] then
    trace.reject(sid, call.id, REJECTED[decision])
  else
    trace.note(sid, ('%s: %s'):format(ALLOWED[decision] or decision, call.name or '?'))
  end
end

--- The `agent/requestPermission` handler.
---@param params {sessionId: string, toolCall: table, tool: table?, options: table[]?}
---@param ctx {client_id: integer}
---@return table? result
---@return table? error
function M.handle(params, ctx)
  local sid, call = params.sessionId, params.toolCall or {}
  local options = params.options and #params.options > 0 and params.options or nil
  local co, is_main = coroutine.running()
  if co and not is_main then
    local answer, waiting = nil, false
    M.choose(call, options, function(decision, reason)
      answer = { decision = decision, reason = reason }
      if waiting then
        local ok, err = coroutine.resume(co)
        if not ok then
          require('mini_agent.log').write('answering agent/requestPermission failed: ' .. tostring(err))
        end
      end
    end)
    if not answer then
      waiting = true
      coroutine.yield()
    end
    record(sid, call, answer.decision)
    return answer
  end
  M.choose(call, options, function(decision, reason)
    record(sid, call, decision)
    require('mini_agent').approve(sid, call.id, decision, reason, ctx.client_id)
  end)
  local later = 'the decision follows with agent/approve'
  return nil, vim.lsp.rpc_response_error(vim.lsp.protocol.ErrorCodes.RequestCancelled, later)
end

return M
