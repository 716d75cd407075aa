-- A workspace tool that prints while it runs, against the real daemon: each printed line shows under
-- the running call before the call ends (the tool holds after its third line until the test has seen
-- it), the output folds once the call ends, and the observation is the tool's return value alone.
-- Then the slash commands: the prompt and :MiniAgentAsk complete them from agent/listCommands, and
-- `/tools` in the conversation shows the daemon's answer in the trace without a model turn.
local h = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

local TOOL = {
  '"""A tool that prints while it runs."""',
  '',
  'import os',
  'import time',
  '',
  '',
  'def slow_print(lines: int = 5) -> str:',
  '    """Print numbered lines 0.3 s apart; after the third, wait (20 s at most) for a file named go.',
  '',
  '    Args:',
  '        lines: How many lines to print.',
  '    """',
  '    for n in range(1, lines + 1):',
  '        print(f"line {n}", flush=True)',
  '        deadline = time.monotonic() + (20 if n == 3 else 0.3)',
  '        while time.monotonic() < deadline and not (n == 3 and os.path.exists("go")):',
  '            time.sleep(0.05)',
  '    return f"printed {lines} lines"',
}

h.run(function()
  vim.g.mini_agent = { llm = { baseUrl = h.base_url, model = 'replay' } }
  h.load_plugin()
  local events = h.record_events({ 'MiniAgentToolsChanged', 'MiniAgentSessionEnd' })
  vim.fn.writefile(TOOL, h.root .. '/slow.py')
  vim.cmd('MiniAgentRegister slow.py')
  h.wait('the tool to register', function()
    return h.count(events, 'MiniAgentToolsChanged') > 0
  end)

  vim.cmd('MiniAgentAsk Print some lines')
  h.wait('the first printed line in the trace', function()
    return h.trace_text():find('    │ line 1', 1, true) ~= nil
  end)
  -- the tool is holding: the line arrived while the call runs, before any observation
  assert(not h.trace_text():find('← slow_print', 1, true), 'no observation yet:\n' .. h.trace_text())
  h.eq(0, h.count(events, 'MiniAgentSessionEnd'), 'sessions ended while the tool runs')
  local trace = require('mini_agent.trace')
  local win = assert(trace.window(), 'the trace window')
  h.wait('the third printed line', function()
    return h.trace_text():find('    │ line 3', 1, true) ~= nil
  end)
  vim.fn.writefile({}, h.root .. '/go')
  h.wait('the session to end', function()
    return h.count(events, 'MiniAgentSessionEnd') > 0
  end)

  local text = h.trace_text()
  h.in_order(text, {
    '→ slow_print {"lines": 5}',
    '    │ line 1\n    │ line 2\n    │ line 3\n    │ line 4\n    │ line 5\n',
    '← slow_print: printed 5 lines',
    'Answer: the tool said printed 5 lines',
    '■ done',
  })
  -- once the call ended its output is one closed fold
  local lines = vim.api.nvim_buf_get_lines(trace.bufnr(), 0, -1, false)
  local first = assert(vim.iter(ipairs(lines)):find(function(_, line)
    return line == '    │ line 1'
  end), 'the first printed line')
  local folded = vim.api.nvim_win_call(win, function()
    return { vim.fn.foldclosed(first), vim.fn.foldclosedend(first) }
  end)
  h.eq({ first, first + 4 }, folded, 'the printed lines, folded')
  local shown = h.visible_lines(win)
  h.eq(1, h.occurrences(shown, '▸ slow_print printed 5 lines (zo shows it)'), 'the fold line in ' .. vim.inspect(shown))
  h.eq(0, h.occurrences(shown, '│ line'), 'printed lines on screen')

  -- the prompt completes the daemon's slash commands; free text completes to nothing
  local completion
  vim.ui.input = function(opts, on_confirm)
    completion = opts.completion
    on_confirm(nil)
  end
  vim.cmd('MiniAgentAsk')
  local offered = vim.fn.getcompletion('/t', assert(completion, 'the prompt has a completion'))
  h.eq({ '/tools', '/trust' }, offered, 'commands completing /t')
  h.eq({}, vim.fn.getcompletion('tell me', completion), 'completion of free text')
  h.eq({ '/compact' }, vim.fn.getcompletion('MiniAgentAsk /comp', 'cmdline'), ':MiniAgentAsk completion')

  -- a command in the conversation: the daemon answers it, the trace shows the answer
  vim.cmd('MiniAgentAsk /tools')
  h.wait("the /tools answer", function()
    return h.trace_text():find('/tools:', 1, true) ~= nil
  end)
  local after = h.trace_text()
  h.find(after, 'slow_print', after:find('/tools:', 1, true))
  h.eq(1, h.count(events, 'MiniAgentSessionEnd'), 'sessions ended (a command runs no model turn)')
end)
