-- Shared by the headless tests (run by tests/e2e/editors/test_neovim.py): the environment it prepares,
-- waiting on the event loop, and a pass/fail exit that never leaves nvim hanging.
local M = {}

local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p')
M.plugin_dir = vim.fs.dirname(vim.fs.dirname(here))
M.root = vim.env.MINI_AGENT_TEST_ROOT
M.base_url = vim.env.MINI_AGENT_TEST_BASE_URL
M.python = vim.env.MINI_AGENT_TEST_PYTHON

--- Put the plugin on 'runtimepath' and source its plugin/ file (-u NONE loads no plugins).
function M.load_plugin()
  vim.opt.runtimepath:prepend(M.plugin_dir)
  vim.cmd('runtime plugin/mini_agent.lua')
end

--- The daemon from the source tree (PYTHONPATH comes from the test's environment), through a shell
--- that first appends the daemon's pid to $MINI_AGENT_TEST_PIDS: the runner checks each is gone.
function M.daemon_cmd()
  return { 'sh', '-c', 'echo $$ >>"$MINI_AGENT_TEST_PIDS" && exec "$@"', 'sh', M.python, '-m', 'mini_agent' }
end

---@param what string
---@param condition fun(): boolean
---@param timeout_ms integer?
function M.wait(what, condition, timeout_ms)
  if not vim.wait(timeout_ms or 20000, condition, 20) then
    error('timed out waiting for ' .. what, 2)
  end
end

function M.trace_text()
  local trace = package.loaded['mini_agent.trace']
  local buf = trace and trace.bufnr()
  return buf and table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n') or ''
end

--- Wait for a replayed session (:MiniAgentSessions) to reach `last`; its history arrives as
--- agent/update after the "(history)" header. Returns the trace from that header on.
---@param last string
---@return string
function M.wait_history(last)
  local function history()
    local at = M.trace_text():find('(history)', 1, true)
    return at and M.trace_text():sub(at) or ''
  end
  M.wait('the replayed session up to ' .. last, function()
    return history():find(last, 1, true) ~= nil
  end)
  return history()
end

--- What a window shows of its buffer: a closed fold is its one fold line ('foldtext').
---@param win integer
---@return string[]
function M.visible_lines(win)
  return vim.api.nvim_win_call(win, function()
    local shown, lnum = {}, 1
    while lnum <= vim.fn.line('$') do
      if vim.fn.foldclosed(lnum) == -1 then
        table.insert(shown, vim.fn.getline(lnum))
        lnum = lnum + 1
      else
        table.insert(shown, vim.fn.foldtextresult(lnum))
        lnum = vim.fn.foldclosedend(lnum) + 1
      end
    end
    return shown
  end)
end

--- How many times `needle` occurs in the lines (plain text).
---@param lines string[]
---@param needle string
---@return integer
function M.occurrences(lines, needle)
  local count = 0
  for _, line in ipairs(lines) do
    local from = 1
    while true do
      local _, finish = line:find(needle, from, true)
      if not finish then
        break
      end
      count, from = count + 1, finish + 1
    end
  end
  return count
end

--- Assert `needle` occurs in `haystack` (plain text) after position `from`; returns where it ends.
---@return integer
function M.find(haystack, needle, from)
  local start, finish = haystack:find(needle, from or 1, true)
  if not start then
    error(('expected to find %q%s in:\n%s'):format(needle, from and (' after position ' .. from) or '', haystack), 2)
  end
  return finish
end

--- Assert the needles occur in this order.
function M.in_order(haystack, needles)
  local position = 1
  for _, needle in ipairs(needles) do
    local start, finish = haystack:find(needle, position, true)
    if not start then
      error(('expected %q after position %d in:\n%s'):format(needle, position, haystack), 2)
    end
    position = finish + 1
  end
end

function M.eq(expected, actual, what)
  if not vim.deep_equal(expected, actual) then
    error(('%s: expected %s, got %s'):format(what or 'value', vim.inspect(expected), vim.inspect(actual)), 2)
  end
end

--- Record `User` events of the given patterns, in order.
---@param patterns string[]
---@return {pattern: string, data: table}[]
function M.record_events(patterns)
  local events = {}
  vim.api.nvim_create_autocmd('User', {
    pattern = patterns,
    callback = function(ev)
      table.insert(events, { pattern = ev.match, data = ev.data })
    end,
  })
  return events
end

function M.count(events, pattern)
  return #vim.tbl_filter(function(ev)
    return ev.pattern == pattern
  end, events)
end

--- The lines in a file that are not blank (what count_file_lines reports by default).
function M.non_blank_lines(path)
  return #vim.tbl_filter(function(line)
    return vim.trim(line) ~= ''
  end, vim.fn.readfile(path))
end

local function stop_daemons()
  local client = package.loaded['mini_agent.client']
  if client then
    client.stop()
    vim.wait(5000, function()
      return #client.running() == 0
    end, 20)
  end
end

--- Run a test body; exit 0 when it passes, 1 (with the trace and the log) when it fails.
--- `opts.quit_running`: quit with the daemons still running, as a user does (the plugin stops them).
---@param opts {quit_running: boolean?}?
function M.run(body, opts)
  local ok, err = xpcall(body, debug.traceback)
  if not ok then
    io.stderr:write('FAIL: ' .. tostring(err) .. '\n--- trace buffer ---\n' .. M.trace_text() .. '\n')
    local log = package.loaded['mini_agent.log']
    local path = log and log.path()
    if path and vim.fn.filereadable(path) == 1 then
      io.stderr:write('--- daemon log (tail) ---\n' .. table.concat(vim.fn.readfile(path, '', -40), '\n') .. '\n')
    end
  end
  if not (ok and opts and opts.quit_running) then
    pcall(stop_daemons)
  end
  if ok then
    io.stdout:write('PASS\n')
    vim.cmd('qall!')
  else
    vim.cmd('cquit! 1')
  end
end

return M
