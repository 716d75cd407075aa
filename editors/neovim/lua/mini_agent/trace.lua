--- The trace: one scratch buffer that shows what sessions do as `agent/update` arrives.
---
--- It is append-only (the stream of a thought continues the last line), it never takes focus, and
--- windows that show it follow the end unless the user has moved the cursor up in it. Long
--- observations show their first lines and a "… N more lines" line that <CR> expands in place.
--- The model's raw text sits in a closed fold: the parsed tool calls and answer say the same once.
--- What a running tool prints grows under its call (`│ ` lines) and folds away once the call ends.
local config = require('mini_agent.config')

local api = vim.api
local M = {}

local ns = api.nvim_create_namespace('mini_agent.trace')
local ns_fold = api.nvim_create_namespace('mini_agent.trace.fold')
local BUF_NAME = 'mini-agent://trace'

local HIGHLIGHTS = {
  MiniAgentHeader = 'Title',
  MiniAgentStep = 'Special',
  MiniAgentThought = 'Comment',
  MiniAgentTool = 'Function',
  MiniAgentObservation = 'String',
  MiniAgentLive = 'Comment',
  MiniAgentError = 'DiagnosticError',
  MiniAgentAnswer = 'Bold',
  MiniAgentUsage = 'NonText',
  MiniAgentStatus = 'DiagnosticInfo',
  MiniAgentWaiting = 'DiagnosticWarn',
  MiniAgentFold = 'Folded',
}

local ENDS = { end_turn = '■ done', cancelled = '■ cancelled' }
local STOPS = {
  max_turn_requests = 'the step budget is used up',
  loop_detected = 'the same tool call repeated (loop detected)',
  max_tokens = "the request no longer fits the model's context window",
}

---@class mini_agent.TraceState
---@field buf integer?
---@field stream {sid: string, kind: string, mark: integer}? the open text stream, ending on the last line
---@field last_sid string? the session the last lines belong to
---@field steps table<string, integer> per session, the last step with a header
---@field hidden table<integer, {lines: string[], hl: string}> folded observation lines, by extmark id
---@field raw {first: integer, last: integer, label: string?}[] folded rows (0-based, ascending): raw model
---  text, and the printed output of calls that ended (`label` names the tool)
---@field live table<string, {first: integer, last: integer}[]> "<session> <call id>" -> the rows its printed
---  output took so far, while the call runs
---@field rejected table<string, string> "<session> <call id>" -> the verdict, for calls the user rejected
local state = { buf = nil, stream = nil, last_sid = nil, steps = {}, hidden = {}, raw = {}, live = {}, rejected = {} }

--- The prefix of a line a running tool printed, and of its progress reports.
local LIVE_PREFIX = '    │ '
local PROGRESS_PREFIX = '    ⋯ '

function M.define_highlights()
  for group, link in pairs(HIGHLIGHTS) do
    api.nvim_set_hl(0, group, { link = link, default = true })
  end
end

local function blank(buf)
  return api.nvim_buf_line_count(buf) == 1 and api.nvim_buf_get_lines(buf, 0, 1, false)[1] == ''
end

local function edit(buf, fn)
  vim.bo[buf].modifiable = true
  local ok, err = pcall(fn)
  vim.bo[buf].modifiable = false
  if not ok then
    error(err, 0)
  end
end

local function set_window_options(win)
  local options = {
    wrap = true,
    linebreak = true,
    number = false,
    relativenumber = false,
    signcolumn = 'no',
    foldcolumn = '0',
    foldmethod = 'expr',
    foldexpr = "v:lua.require'mini_agent.trace'.foldexpr()",
    foldtext = "v:lua.require'mini_agent.trace'.foldtext()",
    foldlevel = 0,
    foldminlines = 0,
    foldenable = true,
    fillchars = 'fold: ',
    list = false,
    spell = false,
    cursorline = false,
  }
  for name, value in pairs(options) do
    api.nvim_set_option_value(name, value, { win = win, scope = 'local' })
  end
end

--- The trace buffer, created on first use.
---@return integer
function M.buf()
  if state.buf and api.nvim_buf_is_valid(state.buf) then
    return state.buf
  end
  local buf = api.nvim_create_buf(false, true)
  state.buf, state.stream, state.last_sid, state.steps, state.hidden, state.raw = buf, nil, nil, {}, {}, {}
  state.rejected, state.live = {}, {}
  pcall(api.nvim_buf_set_name, buf, BUF_NAME)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = 'miniagent'
  vim.keymap.set('n', '<CR>', M.expand_at_cursor, { buffer = buf, desc = 'mini-agent: show the whole observation' })
  vim.keymap.set('n', 'q', '<Cmd>close<CR>', { buffer = buf, desc = 'mini-agent: close the trace window' })
  api.nvim_create_autocmd('BufWinEnter', {
    buffer = buf,
    callback = function()
      set_window_options(api.nvim_get_current_win())
    end,
  })
  return buf
end

--- 'foldexpr' of trace windows: each stretch of raw model text is one fold.
---@return string
function M.foldexpr()
  local row = vim.v.lnum - 1
  if api.nvim_get_current_buf() ~= state.buf then
    return '0'
  end
  for i = #state.raw, 1, -1 do
    local raw = state.raw[i]
    if raw.first <= row then
      return row > raw.last and '0' or (row == raw.first and '>1' or '1')
    end
  end
  return '0'
end

--- 'foldtext' of trace windows: a label, not the text's first line, which may be the answer again.
---@return string
function M.foldtext()
  local count = vim.v.foldend - vim.v.foldstart + 1
  for _, region in ipairs(state.raw) do
    if region.first == vim.v.foldstart - 1 and region.label then
      return ('▸ %s printed %d line%s (zo shows it)'):format(region.label, count, count == 1 and '' or 's')
    end
  end
  return ('▸ model text, %d line%s (zo shows it)'):format(count, count == 1 and '' or 's')
end

--- The trace buffer if it exists (for tests and statuslines), without creating it.
---@return integer?
function M.bufnr()
  return state.buf and api.nvim_buf_is_valid(state.buf) and state.buf or nil
end

---@return integer? win a window of the current tab page showing the trace
function M.window()
  local buf = M.bufnr()
  if not buf then
    return nil
  end
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    if api.nvim_win_get_buf(win) == buf then
      return win
    end
  end
end

--- Show the trace in a split without moving the cursor out of the current window.
---@return integer win
function M.open()
  local existing = M.window()
  if existing then
    return existing
  end
  local opts = config.get().trace
  local vertical = opts.position == 'right' or opts.position == 'left'
  local size = opts.size
    or (vertical and math.max(40, math.floor(vim.o.columns * 0.4)) or math.floor(vim.o.lines * 0.3))
  local buf = M.buf()
  local win = api.nvim_open_win(buf, false, {
    split = opts.position,
    win = -1,
    width = vertical and size or nil,
    height = (not vertical) and size or nil,
  })
  set_window_options(win)
  api.nvim_win_set_cursor(win, { api.nvim_buf_line_count(buf), 0 })
  return win
end

function M.close()
  local win = M.window()
  if win and #api.nvim_tabpage_list_wins(0) > 1 then
    api.nvim_win_close(win, false)
  end
end

function M.toggle()
  if M.window() then
    M.close()
  else
    M.open()
  end
end

--- Scroll windows showing the trace to its end, unless the user moved up in the current one.
local function follow(buf, old_count)
  if not config.get().trace.follow then
    return
  end
  local count = api.nvim_buf_line_count(buf)
  local current = api.nvim_get_current_win()
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if win ~= current or api.nvim_win_get_cursor(win)[1] >= old_count then
      api.nvim_win_set_cursor(win, { count, 0 })
    end
  end
end

--- Highlight rows first..last (to the end of the last); `id` moves an existing mark.
local function highlight(buf, first, last, hl, id)
  if not hl then
    return nil
  end
  return api.nvim_buf_set_extmark(buf, ns, first, 0, {
    id = id,
    end_row = last,
    end_col = #api.nvim_buf_get_lines(buf, last, last + 1, false)[1],
    hl_group = hl,
  })
end

--- The row the next appended line goes to.
local function next_row(buf)
  return blank(buf) and 0 or api.nvim_buf_line_count(buf)
end

--- Append whole lines; returns the row of the first one.
---@param lines string[]
---@param hl string?
---@return integer
local function add(lines, hl)
  local buf = M.buf()
  local old_count = api.nvim_buf_line_count(buf)
  local row = next_row(buf)
  edit(buf, function()
    api.nvim_buf_set_lines(buf, row, -1, false, lines)
  end)
  highlight(buf, row, row + #lines - 1, hl)
  state.stream = nil
  follow(buf, old_count)
  return row
end

--- Continue a text stream (a thought or an answer arriving in pieces), or start one on a new line.
--- A `raw` stream is folded; its rows are known before they are written, since folds are computed
--- as the lines change.
local function stream(sid, kind, text, hl, prefix, raw)
  local buf = M.buf()
  local open = state.stream
  if not (open and open.sid == sid and open.kind == kind) then
    local lines = vim.split((prefix or '') .. text, '\n', { plain = true })
    local region = nil
    if raw then
      region = { first = next_row(buf), last = next_row(buf) + #lines - 1 }
      table.insert(state.raw, region)
    end
    local row = add(lines, nil)
    local mark = highlight(buf, row, api.nvim_buf_line_count(buf) - 1, hl)
    state.stream = { sid = sid, kind = kind, region = region, mark = mark }
    return
  end
  local lines = vim.split(text, '\n', { plain = true })
  local old_count = api.nvim_buf_line_count(buf)
  local last = old_count - 1
  local width = #api.nvim_buf_get_lines(buf, last, old_count, false)[1]
  if open.region then
    open.region.last = open.region.last + #lines - 1
  end
  edit(buf, function()
    api.nvim_buf_set_text(buf, last, width, last, width, lines)
  end)
  -- the start is read back from the mark: an expanded fold above may have moved it
  local row = api.nvim_buf_get_extmark_by_id(buf, ns, open.mark, {})[1]
  highlight(buf, row, api.nvim_buf_line_count(buf) - 1, hl, open.mark)
  follow(buf, old_count)
end

--- A session id short enough for one line and long enough to tell sessions apart.
---@param sid string
---@return string
function M.short(sid)
  return sid:sub(1, 13)
end

--- Before content of a session: a line when another session wrote last, and a step header.
local function header(sid, step)
  if state.last_sid ~= sid then
    add({ ('── session %s ──'):format(M.short(sid)) }, 'MiniAgentHeader')
    state.last_sid = sid
  end
  if step and state.steps[sid] ~= step then
    state.steps[sid] = step
    add({ ('Step %d'):format(step + 1) }, 'MiniAgentStep')
  end
end

local function encode(value)
  if type(value) == 'table' and vim.tbl_isempty(value) then
    return '{}'
  end
  local ok, text = pcall(vim.json.encode, value)
  return ok and text or vim.inspect(value)
end

--- The arguments as the model wrote them, else re-encoded.
---@param call table a ToolCall (or a tool_call update)
---@return string
function M.arguments(call)
  if type(call.rawArguments) == 'string' and vim.trim(call.rawArguments) ~= '' then
    return vim.trim(call.rawArguments)
  end
  return encode(call.arguments or {})
end

local function indent(lines, prefix)
  return vim.tbl_map(function(line)
    return prefix .. line
  end, lines)
end

local function tool_call(update)
  local args = vim.split(M.arguments(update), '\n', { plain = true })
  args[1] = ('→ %s %s'):format(update.name or update.title or '?', args[1])
  for i = 2, #args do
    args[i] = '    ' .. args[i]
  end
  add(args, 'MiniAgentTool')
  if update.parseError then
    add({ '    ✗ arguments not parsed: ' .. tostring(update.parseError) }, 'MiniAgentError')
  end
end

--- The user rejected this call: its observation (the refusal) says so, on one line.
---@param sid string
---@param call_id string
---@param verdict string
function M.reject(sid, call_id, verdict)
  M.buf()
  state.rejected[sid .. ' ' .. tostring(call_id)] = verdict
end

--- Rows first..last hold a call's printed output: they extend its open stretch, or start one.
local function live_rows(key, first, last)
  local stretches = state.live[key] or {}
  state.live[key] = stretches
  local open = stretches[#stretches]
  if open and first >= open.first and first <= open.last + 1 then
    open.last = math.max(open.last, last)
  else
    table.insert(stretches, { first = first, last = last })
  end
end

--- What a running call printed, under it; text that did not end its line is continued by the next.
local function live_output(sid, call_id, text)
  if text == '' then
    return
  end
  local key = sid .. ' ' .. tostring(call_id)
  local pieces = vim.split(text, '\n', { plain = true })
  local complete = pieces[#pieces] == ''
  if complete then
    table.remove(pieces)
  end
  local buf = M.buf()
  local open = state.stream
  if open and open.kind == 'live' and open.key == key and not open.complete then
    local old_count = api.nvim_buf_line_count(buf)
    local last = old_count - 1
    local width = #api.nvim_buf_get_lines(buf, last, old_count, false)[1]
    local new = vim.list_extend({ pieces[1] }, indent(vim.list_slice(pieces, 2), LIVE_PREFIX))
    edit(buf, function()
      api.nvim_buf_set_text(buf, last, width, last, width, new)
    end)
    local count = api.nvim_buf_line_count(buf)
    highlight(buf, last, count - 1, 'MiniAgentLive')
    live_rows(key, last, count - 1)
    follow(buf, old_count)
  else
    local row = add(indent(pieces, LIVE_PREFIX), 'MiniAgentLive')
    live_rows(key, row, row + #pieces - 1)
  end
  state.stream = { sid = sid, kind = 'live', key = key, complete = complete }
end

--- A running call's own progress report (a message, a fraction), as one line under it.
local function live_progress(sid, call_id, progress)
  local parts = {}
  if type(progress.message) == 'string' and progress.message ~= '' then
    table.insert(parts, progress.message)
  end
  if type(progress.fraction) == 'number' then
    table.insert(parts, ('%d%%'):format(math.floor(progress.fraction * 100 + 0.5)))
  end
  if #parts > 0 then
    local row = add({ PROGRESS_PREFIX .. table.concat(parts, ' · ') }, 'MiniAgentStatus')
    live_rows(sid .. ' ' .. tostring(call_id), row, row)
  end
end

--- The call ended: the rows it printed become closed folds in every window showing the trace.
local function fold_live(sid, call_id, name)
  local key = sid .. ' ' .. tostring(call_id)
  local stretches = state.live[key]
  state.live[key] = nil
  if not stretches then
    return
  end
  for _, stretch in ipairs(stretches) do
    table.insert(state.raw, { first = stretch.first, last = stretch.last, label = name })
  end
  table.sort(state.raw, function(a, b)
    return a.first < b.first
  end)
  for _, win in ipairs(vim.fn.win_findbuf(M.buf())) do
    api.nvim_win_call(win, function()
      vim.cmd('silent! normal! zx')
    end)
  end
end

--- Lines past the limit go behind a fold line whose extmark remembers them.
local function observation(sid, obs)
  local hl = obs.isError and 'MiniAgentError' or 'MiniAgentObservation'
  local name = (obs.toolName and obs.toolName ~= '') and obs.toolName or 'observation'
  local rejected = state.rejected[sid .. ' ' .. tostring(obs.toolCallId)]
  local outcome = rejected and (' ' .. rejected) or (obs.isError and ' failed' or '')
  local head = ('%s %s%s:'):format(obs.isError and '✗' or '←', name, outcome)
  local output = type(obs.output) == 'string' and obs.output or encode(obs.output)
  local lines = vim.split(output:gsub('\n+$', ''), '\n', { plain = true })
  if #lines == 1 then
    add({ head .. ' ' .. (lines[1] == '' and '(empty)' or lines[1]) }, hl)
  else
    local limit = config.get().trace.observation_lines
    local shown = vim.list_slice(lines, 1, limit)
    add(vim.list_extend({ head }, indent(shown, '    ')), hl)
    if #lines > limit then
      local rest = indent(vim.list_slice(lines, limit + 1), '    ')
      local row = add({ ('    … %d more lines (<CR> shows them)'):format(#rest) }, 'MiniAgentFold')
      local id = api.nvim_buf_set_extmark(M.buf(), ns_fold, row, 0, {})
      state.hidden[id] = { lines = rest, hl = hl }
    end
  end
  if obs.truncated then
    add({ '    [output cut at the daemon’s size limit]' }, 'MiniAgentWaiting')
  end
end

local function usage(update)
  local u = update.usage or {}
  local line = ('  tokens: %d prompt (%d cached), %d completion'):format(
    u.promptTokens or 0,
    u.cachedTokens or 0,
    u.completionTokens or 0
  )
  if update.total then
    local t = update.total
    line = line .. (' · session %d'):format((t.promptTokens or 0) + (t.completionTokens or 0))
  end
  add({ line }, 'MiniAgentUsage')
end

--- Why a run stopped short of an answer, in words (for the trace and the failure notifications).
---@param reason string a stopReason
---@param message string? the daemon's message (for "error")
---@return string
function M.stop_text(reason, message)
  if reason == 'error' then
    return tostring(message or 'the model server failed')
  end
  return STOPS[reason] or reason
end

local function status(sid, update)
  if update.status == 'awaiting_approval' then
    header(sid)
    add({ '⏸ waiting for approval' }, 'MiniAgentWaiting')
  elseif update.stopReason then
    header(sid)
    local reason = update.stopReason
    local line = ENDS[reason]
      or ('■ %s: %s'):format(reason == 'error' and 'error' or 'stopped', M.stop_text(reason, update.message))
    add({ line }, reason == 'error' and 'MiniAgentError' or 'MiniAgentStatus')
  end
end

--- Render one `agent/update`.
---@param sid string
---@param step integer
---@param update table
function M.update(sid, step, update)
  local kind = update.kind
  if kind == 'user_message_chunk' then
    M.session_start(sid, update.text or '', 'follow-up')
  elseif kind == 'agent_thought_chunk' then
    header(sid, step)
    stream(sid, 'thought', update.text or '', 'MiniAgentThought', nil, true)
  elseif kind == 'tool_call' then
    header(sid, step)
    tool_call(update)
  elseif kind == 'tool_call_update' and update.observation then
    header(sid, step)
    observation(sid, update.observation)
    local name = update.observation.toolName
    fold_live(sid, update.toolCallId, (name and name ~= '') and name or 'the tool')
  elseif kind == 'tool_call_update' and (update.output or update.progress) then
    header(sid, step)
    if type(update.output) == 'table' and type(update.output.append) == 'string' then
      live_output(sid, update.toolCallId, update.output.append)
    end
    if type(update.progress) == 'table' then
      live_progress(sid, update.toolCallId, update.progress)
    end
  elseif kind == 'agent_message_chunk' then
    header(sid, step)
    stream(sid, 'answer', update.text or '', 'MiniAgentAnswer', 'Answer: ')
  elseif kind == 'usage_update' then
    header(sid, step)
    usage(update)
  elseif kind == 'status' then
    status(sid, update)
  end
end

--- A session begins: its task as a header; opens the trace window if so configured.
---@param sid string
---@param task string
---@param label string?
function M.session_start(sid, task, label)
  local first = vim.split(task, '\n', { plain = true })[1]
  if blank(M.buf()) then
    add({ ('━━ %s ━━'):format(first) }, 'MiniAgentHeader')
  else
    add({ '', ('━━ %s ━━'):format(first) }, 'MiniAgentHeader')
  end
  add({ ('session %s%s'):format(sid, label and (' · ' .. label) or '') }, 'MiniAgentUsage')
  state.last_sid, state.steps[sid] = sid, nil
  if config.get().trace.open then
    M.open()
  end
end

--- A line about a session that is not an update (a failed request, the daemon gone).
---@param sid string?
---@param text string
---@param is_error boolean?
function M.note(sid, text, is_error)
  if sid then
    header(sid)
  end
  add(vim.split(text, '\n', { plain = true }), is_error and 'MiniAgentError' or 'MiniAgentStatus')
end

--- Replace a fold line with the lines it hides.
---@param row integer 0-based
---@return boolean expanded
function M.expand(row)
  local buf = M.bufnr()
  if not buf then
    return false
  end
  for _, mark in ipairs(api.nvim_buf_get_extmarks(buf, ns_fold, { row, 0 }, { row, -1 }, {})) do
    local hidden = state.hidden[mark[1]]
    if hidden then
      state.hidden[mark[1]] = nil
      api.nvim_buf_del_extmark(buf, ns_fold, mark[1])
      local shift = #hidden.lines - 1
      for _, raw in ipairs(state.raw) do
        if raw.first > row then
          raw.first, raw.last = raw.first + shift, raw.last + shift
        end
      end
      for _, stretches in pairs(state.live) do
        for _, stretch in ipairs(stretches) do
          if stretch.first > row then
            stretch.first, stretch.last = stretch.first + shift, stretch.last + shift
          end
        end
      end
      edit(buf, function()
        api.nvim_buf_set_lines(buf, row, row + 1, false, hidden.lines)
      end)
      highlight(buf, row, row + #hidden.lines - 1, hidden.hl)
      return true
    end
  end
  return false
end

function M.expand_at_cursor()
  M.expand(api.nvim_win_get_cursor(0)[1] - 1)
end

M.define_highlights()

return M
