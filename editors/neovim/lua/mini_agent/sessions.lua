--- What the plugin knows of sessions, fed by `agent/update`; turns updates into trace lines,
--- `User` autocmds and notifications.
local config = require('mini_agent.config')
local trace = require('mini_agent.trace')

local M = {}

--- Stop reasons that mean the task was not done, and how loudly to say so.
local FAILURES = {
  error = vim.log.levels.ERROR,
  max_turn_requests = vim.log.levels.WARN,
  loop_detected = vim.log.levels.WARN,
  max_tokens = vim.log.levels.WARN,
}

---@class mini_agent.Session
---@field id string
---@field task string
---@field root string
---@field status string
---@field running boolean an agent/run of ours is in flight
---@field answer string[] answer chunks of the current turn
---@field calls table<string, table> tool calls without an observation yet, by id
---@field on_done fun(err: table?, result: table?)? called when the run in flight ends

---@type table<string, mini_agent.Session>
M.sessions = {}
---@type string[] session ids, oldest first
M.order = {}
---@type table<string, boolean> sessions whose history agent/loadSession is sending: trace lines only
M.replaying = {}

--- Fire `User <pattern>` with `data` (see :h mini-agent-events).
---@param pattern string
---@param data table
function M.fire(pattern, data)
  vim.api.nvim_exec_autocmds('User', { pattern = pattern, data = data, modeline = false })
end

local function notify(text, level)
  if config.get().notify then
    require('mini_agent.text').notify('mini-agent: ' .. text, level or vim.log.levels.INFO)
  end
end

--- Track a session (started here, or found through listSessions).
---@param sid string
---@param fields {task: string?, root: string, status: string?}
---@return mini_agent.Session
function M.track(sid, fields)
  local session = M.sessions[sid]
  if not session then
    session = { id = sid, task = '', status = 'ready', running = false, answer = {}, calls = {} }
    M.sessions[sid] = session
    table.insert(M.order, sid)
  end
  session.root = fields.root
  session.task = fields.task or session.task
  session.status = fields.status or session.status
  return session
end

--- The newest session with an agent/run in flight.
---@return mini_agent.Session?
function M.latest_running()
  for i = #M.order, 1, -1 do
    local session = M.sessions[M.order[i]]
    if session.running then
      return session
    end
  end
end

local function on_status(session, step, update)
  local data = { sessionId = session.id, step = step, status = update.status, stopReason = update.stopReason }
  M.fire('MiniAgentStatus', data)
  if update.status == 'awaiting_approval' then
    -- no notification: the approval prompt (agent/requestPermission) comes at the same moment
    M.fire('MiniAgentAwaitingApproval', vim.tbl_extend('force', data, { toolCalls = vim.tbl_values(session.calls) }))
  elseif update.stopReason == 'end_turn' then
    M.fire('MiniAgentAnswer', { sessionId = session.id, answer = table.concat(session.answer) })
  end
end

--- The `agent/update` handler.
---@param params {sessionId: string, step: integer, update: table}
---@param client_id integer
function M.on_update(params, client_id)
  local sid, step, update = params.sessionId, params.step, params.update
  if type(sid) ~= 'string' or type(update) ~= 'table' then
    return
  end
  trace.update(sid, step, update)
  if M.replaying[sid] then -- history, not news: no autocmds, no change to what the session is doing
    return
  end
  local daemon = require('mini_agent.client').by_client(client_id)
  local session = M.sessions[sid] or M.track(sid, { root = daemon and daemon.root or config.root() })
  M.fire('MiniAgentUpdate', params)
  local kind = update.kind
  if kind == 'tool_call' then
    session.calls[update.toolCallId] = update
    M.fire('MiniAgentToolCall', { sessionId = sid, step = step, toolCall = update })
  elseif kind == 'tool_call_update' and update.observation then
    session.calls[update.toolCallId] = nil
    M.fire('MiniAgentToolResult', {
      sessionId = sid,
      step = step,
      toolCallId = update.toolCallId,
      status = update.status,
      observation = update.observation,
    })
  elseif kind == 'agent_message_chunk' then
    table.insert(session.answer, update.text or '')
  elseif kind == 'status' then
    session.status = update.status or session.status
    on_status(session, step, update)
  end
end

function M.on_tools_changed(params, client_id)
  local daemon = require('mini_agent.client').by_client(client_id)
  if daemon then
    daemon.tools = params.tools or {}
  end
  M.fire('MiniAgentToolsChanged', { tools = params.tools or {} })
end

--- End the run in flight (its answer came, it failed, or the daemon died): autocmd, note, callback.
---@param session mini_agent.Session
---@param err table? a JSON-RPC error
---@param result table? the agent/run result
function M.finish_run(session, err, result)
  if not session.running then
    return
  end
  session.running = false
  local done = session.on_done
  session.on_done = nil
  if err then
    trace.note(session.id, '■ ' .. tostring(err.message), true)
    notify(('session %s: %s'):format(trace.short(session.id), tostring(err.message)), vim.log.levels.ERROR)
    M.fire('MiniAgentSessionEnd', { sessionId = session.id, error = err.message })
  else
    session.status = result.status or session.status
    local failure = FAILURES[result.stopReason]
    if failure then
      local why = trace.stop_text(result.stopReason, result.error)
      notify(('session %s stopped (%s): %s'):format(trace.short(session.id), result.stopReason, why), failure)
    elseif result.finalAnswer and not trace.window() then
      notify(vim.split(result.finalAnswer, '\n', { plain = true })[1])
    end
    M.fire('MiniAgentSessionEnd', result)
  end
  if done then
    done(err, result)
  end
end

--- A daemon died: its runs will never answer.
---@param root string
---@param why string
function M.on_daemon_exit(root, why)
  for _, sid in ipairs(M.order) do
    local session = M.sessions[sid]
    if session.root == root then
      M.finish_run(session, { message = why })
    end
  end
end

return M
