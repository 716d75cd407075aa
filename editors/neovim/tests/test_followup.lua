-- :MiniAgentAsk goes on with the workspace's conversation: the second question is a follow-up turn
-- of the same session (agent/prompt), which sees the first; :MiniAgentAsk! starts a new one.
-- :MiniAgentSessions replays the conversation with its follow-up in place, and fires no live events.
local h = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

h.run(function()
  vim.g.mini_agent = { llm = { baseUrl = h.base_url, model = 'replay' } }
  h.load_plugin()
  local events = h.record_events({ 'MiniAgentSessionStart', 'MiniAgentSessionEnd' })
  local live = h.record_events({ 'MiniAgentUpdate', 'MiniAgentAnswer', 'MiniAgentStatus' })
  local function ask(command, ends)
    vim.cmd(command)
    h.wait('answer ' .. ends, function()
      return h.count(events, 'MiniAgentSessionEnd') >= ends
    end)
  end

  ask('MiniAgentAsk first question', 1)
  ask('MiniAgentAsk and a follow-up', 2)
  ask('MiniAgentAsk! fresh start', 3)

  local first, follow_up, fresh = events[1].data, events[3].data, events[5].data
  h.eq(first.sessionId, follow_up.sessionId, 'the follow-up is a turn of the same session')
  h.eq(true, follow_up.followUp, 'the follow-up says so')
  h.eq('two, after and a follow-up', events[4].data.finalAnswer, 'the follow-up answer')
  assert(fresh.sessionId ~= first.sessionId, ':MiniAgentAsk! starts a new session')
  h.eq('three', events[6].data.finalAnswer, 'the new conversation answer')
  h.in_order(h.trace_text(), {
    '━━ first question ━━',
    'Answer: one',
    '━━ and a follow-up ━━',
    'follow-up',
    'Answer: two, after and a follow-up',
    '━━ fresh start ━━',
    'Answer: three',
  })

  local before = #live
  vim.ui.select = function(items, _, on_choice)
    on_choice(vim.tbl_filter(function(item)
      return item.sessionId == first.sessionId
    end, items)[1])
  end
  vim.cmd('MiniAgentSessions')
  local history = h.wait_history('Answer: two')
  h.in_order(history, {
    'Answer: one',
    '━━ and a follow-up ━━',
    'follow-up',
    'Answer: two, after and a follow-up',
  })
  h.eq(before, #live, 'live events fired while the history was replayed')
end)
