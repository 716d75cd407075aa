-- The trace buffer and the options, without a daemon: streamed text continues the last line, the
-- model's raw text sits in a closed fold, long observations fold behind one line that <CR> expands,
-- errors are marked, sessions that interleave get a header, the window opens without taking focus
-- and follows the end; a running call's printed output grows under it and folds when the call ends;
-- bad options are refused with the option's name.
local h = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

local function lines()
  return vim.api.nvim_buf_get_lines(require('mini_agent.trace').bufnr(), 0, -1, false)
end

local function refused(opts, name)
  local ok, err = pcall(require('mini_agent').setup, opts)
  assert(not ok, 'accepted ' .. vim.inspect(opts))
  h.find(tostring(err), name)
end

h.run(function()
  h.load_plugin()
  refused({ trace = { position = 'diagonal' } }, 'trace.position')
  refused({ llm = { toolMode = 'telepathy' } }, 'llm.toolMode')
  refused({ maxSteps = 0 }, 'maxSteps')
  refused({ cmd = 'mini-agent serve' }, 'cmd')
  require('mini_agent').setup({ trace = { observation_lines = 3 } })

  local trace = require('mini_agent.trace')
  local win = vim.api.nvim_get_current_win()
  trace.session_start('sess_aaaaaaaaaaaa', 'First task\nwith a second line')
  h.eq(win, vim.api.nvim_get_current_win(), 'focus after the trace opened')
  local trace_win = assert(trace.window(), 'trace window')

  trace.update('sess_aaaaaaaaaaaa', 0, { kind = 'agent_thought_chunk', text = 'Tho' })
  trace.update('sess_aaaaaaaaaaaa', 0, { kind = 'agent_thought_chunk', text = 'ught: a\nb' })
  trace.update('sess_aaaaaaaaaaaa', 0, { kind = 'agent_thought_chunk', text = 'c' })
  trace.update('sess_aaaaaaaaaaaa', 0, {
    kind = 'tool_call', toolCallId = 'c1', name = 'big', arguments = { n = 10 }, rawArguments = '', status = 'pending',
  })
  local output = table.concat(vim.tbl_map(tostring, vim.fn.range(1, 10)), '\n')
  trace.update('sess_aaaaaaaaaaaa', 0, {
    kind = 'tool_call_update', toolCallId = 'c1', status = 'completed',
    observation = { toolCallId = 'c1', toolName = 'big', output = output, isError = false },
  })
  -- another session writes in between
  trace.update('sess_bbbbbbbbbbbb', 0, {
    kind = 'tool_call_update', toolCallId = 'c2', status = 'failed',
    observation = { toolCallId = 'c2', toolName = 'broken', output = 'ValueError: boom', isError = true },
  })
  trace.update('sess_aaaaaaaaaaaa', 1, { kind = 'agent_thought_chunk', text = 'Final Answer: All done.' })
  trace.update('sess_aaaaaaaaaaaa', 1, { kind = 'agent_message_chunk', text = 'All ' })
  trace.update('sess_aaaaaaaaaaaa', 1, { kind = 'agent_message_chunk', text = 'done.' })
  trace.update('sess_aaaaaaaaaaaa', 1, { kind = 'status', status = 'finished', stopReason = 'end_turn' })

  h.eq({
    '━━ First task ━━',
    'session sess_aaaaaaaaaaaa',
    'Step 1',
    'Thought: a',
    'bc',
    '→ big {"n":10}',
    '← big:',
    '    1',
    '    2',
    '    3',
    '    … 7 more lines (<CR> shows them)',
    '── session sess_bbbbbbbb ──',
    'Step 1',
    '✗ broken failed: ValueError: boom',
    '── session sess_aaaaaaaa ──',
    'Step 2',
    'Final Answer: All done.',
    'Answer: All done.',
    '■ done',
  }, lines(), 'trace lines')

  -- the raw model text is folded away (closed), each stretch on its own; the parsed lines are not
  local function fold(win, lnum)
    return vim.api.nvim_win_call(win, function()
      return { vim.fn.foldclosed(lnum), vim.fn.foldclosedend(lnum) }
    end)
  end
  h.eq({ 4, 5 }, fold(trace_win, 4), 'the first thought, folded')
  h.eq({ 17, 17 }, fold(trace_win, 17), 'the second thought, folded')
  for _, lnum in ipairs({ 3, 6, 7, 16, 18, 19 }) do
    h.eq({ -1, -1 }, fold(trace_win, lnum), 'no fold on line ' .. lnum .. ' ' .. lines()[lnum])
  end
  local shown = h.visible_lines(trace_win)
  h.eq('▸ model text, 2 lines (zo shows it)', shown[4], 'the fold line')
  h.eq('→ big {"n":10}', shown[5], 'the tool call after the fold')
  h.eq(1, h.occurrences(shown, 'All done.'), 'the answer, shown once')
  h.eq(win, vim.api.nvim_get_current_win(), 'focus after the updates')
  h.eq(#lines(), vim.api.nvim_win_get_cursor(trace_win)[1], 'the trace window follows the end')

  -- the error line is highlighted as an error
  local buf = trace.bufnr()
  local marks = vim.api.nvim_buf_get_extmarks(buf, -1, { 13, 0 }, { 13, -1 }, { details = true })
  assert(vim.iter(marks):any(function(mark)
    return mark[4].hl_group == 'MiniAgentError'
  end), 'error highlight on ' .. lines()[14])

  -- <CR> on the fold line shows the rest, in place
  vim.api.nvim_set_current_win(trace_win)
  vim.api.nvim_win_set_cursor(trace_win, { 11, 0 })
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<CR>', true, false, true), 'x', false)
  local after = lines()
  h.eq({ '← big:', '    1', '    2', '    3', '    4' }, vim.list_slice(after, 7, 11), 'expanded head')
  h.eq('    10', after[17], 'expanded tail')
  h.eq('── session sess_bbbbbbbb ──', after[18], 'the next line')
  assert(not vim.bo[buf].modifiable, 'the trace stays read-only')
  h.eq({ 23, 23 }, fold(trace_win, 23), 'the second thought, still folded below the expanded lines')
  h.eq({ -1, -1 }, fold(trace_win, 24), 'the answer, not folded')

  -- :MiniAgentTrace hides and shows it; :MiniAgentAsk without a task asks for one
  vim.api.nvim_set_current_win(win)
  vim.cmd('MiniAgentTrace')
  assert(not trace.window(), 'hidden')
  vim.cmd('MiniAgentTrace')
  assert(trace.window(), 'shown')
  h.eq(win, vim.api.nvim_get_current_win(), 'focus after :MiniAgentTrace')
  h.eq({ 4, 5 }, fold(trace.window(), 4), 'folded in a new window too')
  -- any window showing the trace folds it, not only those the plugin opens
  vim.cmd('tab sbuffer ' .. buf)
  h.eq({ 23, 23 }, fold(vim.api.nvim_get_current_win(), 23), 'folded in a window opened by hand')
  vim.cmd('tabclose')
  local asked
  vim.ui.input = function(opts, on_confirm)
    asked = opts.prompt
    on_confirm(nil)
  end
  vim.cmd('MiniAgentAsk')
  h.find(asked, 'task')

  -- a range adds the selected lines to the task
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'alpha', 'beta', 'gamma' })
  local task = require('mini_agent').task_with_range({ range = 2, line1 = 2, line2 = 3 }, 'Explain')
  h.find(task, 'Explain\n\nLines 2-3 of')
  h.find(task, 'beta\ngamma')

  -- what a running call prints grows under it, continuing an unfinished line; its end folds it
  local live_buf = trace.bufnr()
  local function live(update)
    trace.update('sess_cccccccccccc', 0, vim.tbl_extend('force', { kind = 'tool_call_update', toolCallId = 'p1' }, update))
  end
  trace.update('sess_cccccccccccc', 0, {
    kind = 'tool_call', toolCallId = 'p1', name = 'printer', arguments = {}, rawArguments = '', status = 'pending',
  })
  live({ status = 'in_progress' })
  live({ status = 'in_progress', output = { append = 'one\ntw' } })
  live({ status = 'in_progress', output = { append = 'o\n' } })
  live({ status = 'in_progress', progress = { message = 'halfway', fraction = 0.5 } })
  live({ status = 'in_progress', output = { append = 'three\n' } })
  local count = vim.api.nvim_buf_line_count(live_buf)
  h.eq({ '→ printer {}', '    │ one', '    │ two', '    ⋯ halfway · 50%', '    │ three' },
    vim.api.nvim_buf_get_lines(live_buf, count - 5, count, false), 'live output under the running call')
  h.eq({ -1, -1 }, fold(trace.window(), count - 3), 'not folded while the call runs')
  live({
    status = 'completed',
    observation = { toolCallId = 'p1', toolName = 'printer', output = 'printed 3', isError = false },
  })
  h.eq('← printer: printed 3', lines()[count + 1], 'the observation after the output')
  h.eq({ count - 3, count }, fold(trace.window(), count - 2), 'the output, folded once the call ended')
  local on_screen = h.visible_lines(trace.window())
  h.eq(1, h.occurrences(on_screen, '▸ printer printed 4 lines (zo shows it)'), 'its fold line')
  h.eq(0, h.occurrences(on_screen, '│ one'), 'the output, hidden')
  h.eq({ 23, 23 }, fold(trace.window(), 23), 'the earlier folds stay')

  -- the help file's tags are well formed and unique
  local doc = vim.fn.tempname()
  vim.fn.mkdir(doc, 'p')
  vim.fn.writefile(vim.fn.readfile(h.plugin_dir .. '/doc/mini-agent.txt'), doc .. '/mini-agent.txt')
  vim.cmd('helptags ' .. vim.fn.fnameescape(doc))
  local tags = vim.fn.readfile(doc .. '/tags')
  assert(#tags >= 25, 'help tags: ' .. #tags)
  h.find(table.concat(tags, '\n'), ':MiniAgentAsk\tmini-agent.txt')
end)
