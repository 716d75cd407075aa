-- A tool registered with requiresApproval: the daemon asks (agent/requestPermission), the plugin puts
-- the tool and its full arguments to vim.ui.select. "Allow once" (answered at once, as the built-in
-- select does) runs the tool; "Reject" (answered later, as pickers do) does not. A prompt left
-- unanswered leaves the session waiting; :MiniAgentApprovals then finds the call and decides it.
-- The prompt is the only notice of a waiting call (no warning besides it), and a rejection is one
-- line of the trace.
local h = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

local errors, warnings = {}, {}

--- Wait for a condition, failing at once on an error notification (e.g. a refused agent/approve).
local function wait(what, condition)
  h.wait(what, function()
    return condition() or #errors > 0
  end)
  assert(#errors == 0, 'error notification: ' .. table.concat(errors, '\n'))
end

local function ask(task)
  local result
  require('mini_agent').ask(task, {
    on_done = function(err, res)
      result = { err = err, res = res }
    end,
  })
  wait('the session "' .. task .. '" to end', function()
    return result ~= nil
  end)
  assert(not result.err, vim.inspect(result.err))
  return result.res
end

h.run(function()
  h.load_plugin()
  local notify = vim.notify
  vim.notify = function(msg, level, ...)
    if level == vim.log.levels.ERROR then
      table.insert(errors, msg)
    elseif level == vim.log.levels.WARN then
      table.insert(warnings, msg)
    end
    return notify(msg, level, ...)
  end
  require('mini_agent').setup({ cmd = h.daemon_cmd(), llm = { baseUrl = h.base_url, model = 'replay' } })
  local events = h.record_events({ 'MiniAgentToolsChanged', 'MiniAgentAwaitingApproval', 'MiniAgentToolResult' })
  local win = vim.api.nvim_get_current_win()

  local prompts = {}
  local answers = {
    function(items, on_choice) -- at once
      on_choice(items[1])
    end,
    function(items, on_choice) -- later
      vim.defer_fn(function()
        on_choice(items[3])
      end, 100)
    end,
  }
  local function pick(option)
    return function(items, on_choice)
      on_choice(vim.iter(items):find(function(item)
        return item.optionId == option or (item.toolCall and item.toolCall.name == option)
      end))
    end
  end
  vim.ui.select = function(items, opts, on_choice)
    table.insert(prompts, { prompt = opts.prompt, items = vim.tbl_map(opts.format_item, items) })
    table.remove(answers, 1)(items, on_choice)
  end

  vim.cmd('MiniAgentRegister! tools.py')
  h.wait('the tools to register', function()
    return h.count(events, 'MiniAgentToolsChanged') > 0
  end)
  for _, tool in ipairs(events[1].data.tools) do
    assert(tool.requiresApproval, tool.name .. ' needs approval')
  end

  local metrics = h.non_blank_lines(h.root .. '/metrics.py')
  local allowed = ask('Count the lines of metrics.py')
  h.eq('end_turn', allowed.stopReason, 'allowed run')
  h.eq(('metrics.py has %d lines.'):format(metrics), allowed.finalAnswer, 'allowed answer')

  local rejected = ask('Count the lines of schema.py')
  h.eq('end_turn', rejected.stopReason, 'rejected run')
  h.find(rejected.finalAnswer, 'declined')

  -- both prompts named the tool with its full arguments and offered the four decisions
  h.eq(2, #prompts, 'prompts')
  h.find(prompts[1].prompt, 'count_file_lines {"file_path": "metrics.py"}')
  h.find(prompts[2].prompt, 'count_file_lines {"file_path": "schema.py"}')
  h.eq(4, #prompts[1].items, 'options')
  h.find(prompts[1].items[1], 'Allow once')

  -- the approval events, and the tool results: real output once, a refusal the second time
  h.eq(2, h.count(events, 'MiniAgentAwaitingApproval'), 'awaiting-approval events')
  local results = vim.tbl_filter(function(ev)
    return ev.pattern == 'MiniAgentToolResult'
  end, events)
  h.eq('completed', results[1].data.status, 'allowed call')
  h.eq(tostring(metrics), results[1].data.observation.output, 'allowed output')
  h.eq('failed', results[2].data.status, 'rejected call')

  local text = h.trace_text()
  h.in_order(text, {
    '━━ Count the lines of metrics.py ━━',
    '→ count_file_lines {"file_path": "metrics.py"}',
    '⏸ waiting for approval',
    '✓ allowed once: count_file_lines',
    ('← count_file_lines: %d'):format(metrics),
    ('Answer: metrics.py has %d lines.'):format(metrics),
    '■ done',
    '━━ Count the lines of schema.py ━━',
    '→ count_file_lines {"file_path": "schema.py"}',
    '⏸ waiting for approval',
    '✗ count_file_lines rejected: The user declined to run this tool call.',
    'Answer: Not counted:',
    '■ done',
  })
  h.eq(1, h.occurrences(vim.split(text, '\n'), 'rejected'), 'lines about the rejection')
  h.eq({}, warnings, 'warnings besides the approval prompts')
  h.eq(win, vim.api.nvim_get_current_win(), 'current window')

  -- a prompt nobody answers: the session waits; :MiniAgentApprovals lists the call and decides it
  local tools = h.non_blank_lines(h.root .. '/tools.py')
  answers = { function() end, pick('count_file_lines'), pick('allow_once') }
  local waiting
  require('mini_agent').ask('Count the lines of tools.py', {
    on_done = function(err, res)
      waiting = { err = err, res = res }
    end,
  })
  h.wait('the third session to wait for approval', function()
    return h.count(events, 'MiniAgentAwaitingApproval') == 3 and #prompts == 3
  end)
  vim.cmd('MiniAgentApprovals')
  wait('the third session to end', function()
    return waiting ~= nil
  end)
  h.eq(5, #prompts, 'prompts, with the list of waiting calls and the decision')
  h.find(prompts[4].prompt, 'waiting for approval')
  h.find(prompts[4].items[1], 'count_file_lines {"file_path": "tools.py"}')
  h.eq(('tools.py: %d'):format(tools), waiting.res.finalAnswer, 'third answer')
end)
