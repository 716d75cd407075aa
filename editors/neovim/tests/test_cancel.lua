-- :MiniAgentCancel while the model is slow to reply: the run ends with stopReason "cancelled" at
-- once (not after the model's 30 s), the session stays ready, and the trace says so.
local h = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

h.run(function()
  h.load_plugin()
  require('mini_agent').setup({ cmd = h.daemon_cmd(), llm = { baseUrl = h.base_url, model = 'replay' } })
  local events = h.record_events({ 'MiniAgentStatus', 'MiniAgentSessionEnd', 'MiniAgentAnswer' })
  local notes = {}
  vim.notify = function(msg, level)
    table.insert(notes, { msg = msg, level = level })
  end

  vim.cmd('MiniAgentCancel')
  h.find(notes[1].msg, 'no running session')

  vim.cmd('MiniAgentAsk Take your time')
  h.wait('the session to run', function()
    return h.count(events, 'MiniAgentStatus') > 0
  end)
  h.eq('running', events[1].data.status, 'first status')
  local sid = events[1].data.sessionId
  assert(require('mini_agent.sessions').sessions[sid].running, 'a run is in flight')

  vim.cmd('MiniAgentCancel')
  h.wait('the run to end', function()
    return h.count(events, 'MiniAgentSessionEnd') > 0
  end, 15000)
  local ended = events[#events].data
  h.eq('cancelled', ended.stopReason, 'stop reason')
  h.eq('ready', ended.status, 'session status after a cancel')
  h.eq(0, h.count(events, 'MiniAgentAnswer'), 'answers')

  local text = h.trace_text()
  h.in_order(text, { '━━ Take your time ━━', '■ cancelled' })
  assert(not text:find('too late', 1, true), 'the slow reply never arrived')
  assert(not require('mini_agent.sessions').sessions[sid].running, 'no run in flight')
end)
