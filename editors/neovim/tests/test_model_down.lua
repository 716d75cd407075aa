-- The model server is down: :MiniAgentModel offers the configured model alone and its prompt says why,
-- in the daemon's words, without hanging. In a folder that is not trusted, "Never ask" is refused by
-- the daemon when a session starts with it, and the user reads the daemon's message.
local h = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

h.run(function()
  h.load_plugin()
  local errors = {}
  local notify = vim.notify
  vim.notify = function(msg, level, ...)
    if level == vim.log.levels.ERROR then
      table.insert(errors, msg)
    end
    return notify(msg, level, ...)
  end
  require('mini_agent').setup({ cmd = h.daemon_cmd(), llm = { baseUrl = h.base_url, model = 'first' } })

  local shown
  vim.ui.select = function(items, opts, on_choice)
    shown = { prompt = opts.prompt, items = vim.tbl_map(opts.format_item, items) }
    on_choice(nil)
  end
  local done
  require('mini_agent').model(nil, {
    on_done = function(err)
      done = { err = err }
    end,
  })
  h.wait('the model picker', function()
    return done ~= nil
  end)
  h.eq({ 'first  (current)' }, shown.items, 'the only choice')
  h.find(shown.prompt, 'the model server at ' .. h.base_url)
  h.find(shown.prompt, "the configured model 'first' is the only choice")
  h.eq({}, errors, 'error notifications')

  vim.cmd('MiniAgentMode ask_never')
  h.wait('the mode to be kept', function()
    return require('mini_agent.pick').state(h.root).mode == 'ask_never'
  end)
  local failed
  require('mini_agent').ask('Delete everything', {
    on_done = function(err)
      failed = err
    end,
  })
  h.wait('the refused start', function()
    return failed ~= nil
  end)
  h.find(failed.message, 'is not trusted')
  h.eq('workspace_untrusted', vim.tbl_get(failed, 'data', 'reason'), 'the reason')
  h.find(errors[1], 'could not start a session: permission mode ask_never')
end)
