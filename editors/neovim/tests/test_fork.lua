-- :MiniAgentFork forks the workspace's conversation (agent/forkSession): the next :MiniAgentAsk is a
-- follow-up in the fork, which has the first answer in its history, while the original keeps only its own.
local h = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

h.run(function()
  vim.g.mini_agent = { llm = { baseUrl = h.base_url, model = 'replay' } }
  h.load_plugin()
  local events = h.record_events({ 'MiniAgentSessionStart', 'MiniAgentSessionEnd' })
  local notes = {}
  vim.notify = function(msg, level)
    table.insert(notes, { msg = msg, level = level })
  end

  vim.cmd('MiniAgentFork')
  h.find(notes[1].msg, 'no conversation to fork')

  vim.cmd('MiniAgentAsk first question')
  h.wait('the first answer', function()
    return h.count(events, 'MiniAgentSessionEnd') >= 1
  end)
  local original = events[1].data.sessionId

  local forked
  require('mini_agent').fork({ on_done = function(err, result)
    assert(not err, err and err.message)
    forked = result
  end })
  h.wait('the fork', function()
    return forked ~= nil
  end)
  assert(forked.sessionId ~= original, 'the fork is a new session')
  h.eq(1, #forked.steps, 'the fork has the step that answered')
  h.find(notes[#notes].msg, 'goes on in the fork')

  vim.cmd('MiniAgentAsk a side question')
  h.wait('the side answer', function()
    return h.count(events, 'MiniAgentSessionEnd') >= 2
  end)
  local side = events[#events].data
  h.eq(forked.sessionId, side.sessionId, 'the follow-up went to the fork')
  h.eq('side, after a side question', side.finalAnswer, 'the fork answered')
  h.in_order(h.trace_text(), { '━━ first question ━━', 'Answer: one', '━━ a side question ━━', 'Answer: side' })
end)
