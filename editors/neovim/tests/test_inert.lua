-- Model and tool text reaches Neovim's prompts and messages inert: an approval prompt whose raw
-- arguments hold a carriage return (which in a message or prompt moves back to column 0 and lets the
-- rest overwrite what came before), and an answer with OSC 52 (clipboard), hidden text (ESC[8m), a
-- `command:` link and a carriage return. Every prompt, item and notification shows each control
-- character visibly (`^[`, `^M`, `^G`) and holds none itself but newline and tab; the link is plain
-- text. The trace buffer keeps the text as it came (Neovim draws a control character as `^[`).
local h = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

--- The control characters (other than tab and newline) in `text`, as a readable list; '' when none.
local function controls(text)
  local found = {}
  for c in tostring(text):gmatch('[%z\1-\8\11-\31\127]') do
    table.insert(found, ('\\%d'):format(c:byte()))
  end
  for c1 in tostring(text):gmatch('\194[\128-\159]') do
    table.insert(found, ('\\194\\%d'):format(c1:byte(2)))
  end
  return table.concat(found, ' ')
end

h.run(function()
  h.load_plugin()
  local shown = {} -- every string the plugin put before the user outside the trace buffer
  local notify = vim.notify
  vim.notify = function(msg, level, ...)
    table.insert(shown, { what = 'notification', text = msg })
    return notify(msg, level, ...)
  end
  vim.ui.select = function(items, opts, on_choice)
    table.insert(shown, { what = 'prompt', text = opts.prompt })
    for _, item in ipairs(items) do
      table.insert(shown, { what = 'item', text = (opts.format_item or tostring)(item) })
    end
    on_choice(items[1]) -- "Allow once"
  end
  -- the trace stays closed, so the answer is also told in a notification
  require('mini_agent').setup({
    cmd = h.daemon_cmd(),
    llm = { baseUrl = h.base_url, model = 'replay' },
    trace = { open = false },
  })
  local events = h.record_events({ 'MiniAgentToolsChanged' })
  vim.cmd('MiniAgentRegister! tools.py')
  h.wait('the tools to register', function()
    return h.count(events, 'MiniAgentToolsChanged') > 0
  end)

  local result
  require('mini_agent').ask('Count the lines of metrics.py', {
    on_done = function(err, res)
      result = { err = err, res = res }
    end,
  })
  h.wait('the session to end', function()
    return result ~= nil
  end)
  assert(not result.err, vim.inspect(result.err))
  local metrics = h.non_blank_lines(h.root .. '/metrics.py')
  local answer = ('[x](command:workbench.action.terminal.new) \27]52;c;cHduZWQ=\7copied \27[8mhidden\27[0m rm -rf ~\rall good, %d lines'):format(metrics)
  h.eq(answer, result.res.finalAnswer, 'the answer as the model gave it')

  for _, seen in ipairs(shown) do
    h.eq('', controls(seen.text), ('control characters in a %s %q'):format(seen.what, seen.text))
  end
  local prompts = vim.tbl_filter(function(seen)
    return seen.what == 'prompt'
  end, shown)
  h.eq(1, #prompts, 'approval prompts')
  h.find(prompts[1].text, 'count_file_lines {"file_path": "metrics.py"' .. (' '):rep(40) .. '^M}')
  local said = vim.tbl_filter(function(seen)
    return seen.what == 'notification' and seen.text:find('command:', 1, true)
  end, shown)
  h.eq(1, #said, 'notifications of the answer')
  h.find(said[1].text, ('[x](command:workbench.action.terminal.new) ^[]52;c;cHduZWQ=^Gcopied ^[[8mhidden^[[0m rm -rf ~^Mall good, %d lines'):format(metrics))

  -- the trace buffer holds the text unchanged; Neovim draws its control characters as ^[, ^G, ^M
  local text = h.trace_text()
  h.find(text, answer)
  h.find(vim.fn.strtrans(text), 'count the lines ^[]0;owned^G now.')
end)
