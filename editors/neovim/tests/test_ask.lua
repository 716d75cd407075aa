-- Ask without setup(): the daemon comes from the workspace's .venv/bin/mini-agent, options from
-- vim.g.mini_agent. The trace streams the thought, the tool call, the real observation, the answer;
-- focus stays where it was; :MiniAgentSessions shows the stored session again; saving a registered
-- file reloads its tools; :MiniAgentLog shows the daemon's own stderr.
local h = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

h.run(function()
  vim.g.mini_agent = { llm = { baseUrl = h.base_url, model = 'replay' }, log_level = 'DEBUG' }
  h.load_plugin()
  local events = h.record_events({
    'MiniAgentToolsChanged', 'MiniAgentSessionStart', 'MiniAgentToolCall', 'MiniAgentToolResult',
    'MiniAgentAnswer', 'MiniAgentSessionEnd',
  })

  local progress = {}
  vim.api.nvim_create_autocmd('LspProgress', {
    callback = function(ev)
      table.insert(progress, ev.data.params)
    end,
  })

  vim.cmd.edit(h.root .. '/schema.py')
  local win, buf = vim.api.nvim_get_current_win(), vim.api.nvim_get_current_buf()

  vim.cmd('MiniAgentRegister tools.py')
  h.wait('the tools to register', function()
    return h.count(events, 'MiniAgentToolsChanged') > 0
  end)
  local names = vim.tbl_map(function(tool)
    return tool.name
  end, events[1].data.tools)
  table.sort(names)
  h.eq({ 'count_file_lines', 'list_python_files' }, names, 'registered tools')

  vim.cmd('MiniAgentAsk How many lines does schema.py have?')
  h.wait('the session to end', function()
    return h.count(events, 'MiniAgentSessionEnd') > 0
  end)

  -- focus never moved, and the trace is shown in a window of its own
  h.eq(win, vim.api.nvim_get_current_win(), 'current window')
  h.eq(buf, vim.api.nvim_get_current_buf(), 'current buffer')
  local trace = require('mini_agent.trace')
  assert(trace.window(), 'the trace window is open')
  assert(trace.window() ~= win, 'the trace has its own window')
  h.eq('nofile', vim.bo[trace.bufnr()].buftype, 'trace buftype')

  local lines = h.non_blank_lines(h.root .. '/schema.py')
  local text = h.trace_text()
  h.in_order(text, {
    '━━ How many lines does schema.py have? ━━',
    'Step 1',
    'Thought: I need the line count of schema.py.\nAction: count_file_lines\nAction Input: {"file_path": "schema.py"}',
    'tokens:',
    '→ count_file_lines {"file_path": "schema.py"}',
    ('← count_file_lines: %d'):format(lines),
    'Step 2',
    'Thought: I now know the answer.',
    ('Answer: schema.py has %d lines.'):format(lines),
    '■ done',
  })
  -- on screen the call and the answer show once each: the model's raw text is folded away
  local shown = h.visible_lines(trace.window())
  h.eq(1, h.occurrences(shown, '{"file_path": "schema.py"}'), 'the call, shown ' .. vim.inspect(shown))
  h.eq(1, h.occurrences(shown, ('schema.py has %d lines.'):format(lines)), 'the answer, shown')
  h.eq(2, h.occurrences(shown, '▸ model text'), 'folds, one per step')

  -- the events, in order, with their data
  local order = vim.tbl_map(function(ev)
    return ev.pattern
  end, events)
  h.eq({
    'MiniAgentToolsChanged', 'MiniAgentSessionStart', 'MiniAgentToolCall', 'MiniAgentToolResult',
    'MiniAgentAnswer', 'MiniAgentSessionEnd',
  }, order, 'event order')
  local sid = events[2].data.sessionId
  h.eq('count_file_lines', events[3].data.toolCall.name, 'tool call event')
  h.eq(tostring(lines), events[4].data.observation.output, 'tool result event')
  h.eq(('schema.py has %d lines.'):format(lines), events[5].data.answer, 'answer event')
  h.eq('end_turn', events[6].data.stopReason, 'run result')

  -- the run's workDoneToken brings $/progress to vim.lsp (what statuslines show)
  local kinds = vim.tbl_map(function(params)
    return params.value.kind
  end, vim.tbl_filter(function(params)
    return params.token == 'mini-agent/' .. sid
  end, progress))
  h.eq('begin', kinds[1], 'first progress')
  h.eq('end', kinds[#kinds], 'last progress')

  -- :MiniAgentSessions lists it; picking it replays it into the trace
  local offered
  vim.ui.select = function(items, opts, on_choice)
    offered = vim.tbl_map(opts.format_item, items)
    on_choice(items[1])
  end
  vim.cmd('MiniAgentSessions')
  local history = h.wait_history('■ done')
  h.find(offered[1], require('mini_agent.trace').short(sid))
  h.find(offered[1], 'How many lines does schema.py have?')
  h.in_order(history, {
    '→ count_file_lines {"file_path": "schema.py"}',
    ('← count_file_lines: %d'):format(lines),
    ('Answer: schema.py has %d lines.'):format(lines),
    '■ done',
  })
  h.eq(win, vim.api.nvim_get_current_win(), 'current window after :MiniAgentSessions')

  -- saving a registered file re-reflects it (workspace/didChangeWatchedFiles)
  vim.cmd.edit(h.root .. '/tools.py')
  vim.api.nvim_buf_set_lines(0, -1, -1, false, {
    '', '', 'def shout(text: str) -> str:', '    """Upper-case a text."""', '    return text.upper()',
  })
  vim.cmd.write()
  h.wait('the tools to reload', function()
    local last = events[#events]
    return last.pattern == 'MiniAgentToolsChanged' and #last.data.tools == 3
  end)

  -- :MiniAgentLog opens the log: our lines and the daemon's stderr
  vim.cmd('MiniAgentLog')
  local log_text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  h.find(log_text, 'daemon starting in ' .. h.root)
  h.find(log_text, '[mini-agent] DEBUG')
end)
