-- Runs that end without an answer, with the trace window closed: a model server error, the step
-- budget used up and a repeated tool call each give one notification (ERROR for the error, WARN for
-- the others) naming the stop reason and why, as an answer gives one.
local h = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

h.run(function()
  h.load_plugin()
  require('mini_agent').setup({
    cmd = h.daemon_cmd(),
    llm = { baseUrl = h.base_url, model = 'replay', maxRetries = 0 },
    notify = true,
    trace = { open = false },
  })
  local notes = {}
  vim.notify = function(msg, level)
    table.insert(notes, { msg = msg, level = level })
  end
  local registered
  require('mini_agent').register('tools.py', {
    on_done = function(err)
      registered = err or true
    end,
  })
  h.wait('the tools to register', function()
    return registered ~= nil
  end)
  h.eq(true, registered, 'registration')

  --- Run a task to its end; the notifications it gave, and its agent/run result.
  local function ask(task, opts)
    local first, result = #notes + 1, nil
    require('mini_agent').ask(task, vim.tbl_extend('force', opts or {}, {
      on_done = function(err, res)
        assert(not err, vim.inspect(err))
        result = res
      end,
    }))
    h.wait('"' .. task .. '" to end', function()
      return result ~= nil
    end)
    assert(not require('mini_agent.trace').window(), 'the trace window stayed closed')
    return vim.list_slice(notes, first), result
  end

  local cases = {
    { task = 'Count the lines', reason = 'error', level = vim.log.levels.ERROR },
    { task = 'Count with one step', reason = 'max_turn_requests', opts = { maxSteps = 1 } },
    { task = 'Count again and again', reason = 'loop_detected' },
  }
  for _, case in ipairs(cases) do
    local got, result = ask(case.task, case.opts)
    h.eq(case.reason, result.stopReason, case.task .. ': stop reason')
    h.eq(1, #got, case.task .. ': notifications ' .. vim.inspect(got))
    h.eq(case.level or vim.log.levels.WARN, got[1].level, case.task .. ': level')
    h.find(got[1].msg, ('(%s)'):format(case.reason))
    h.find(got[1].msg, require('mini_agent.trace').stop_text(result.stopReason, result.error))
  end
  h.find(h.trace_text(), 'the model is overloaded')
end)
