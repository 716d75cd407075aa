-- The trust prompt: a folder whose pyproject.toml names a tools file, and no trust yet. When the daemon
-- starts, the plugin asks with vim.ui.select, listing what trusting would run, before any other work.
-- "Don't trust": the tools stay out and a warning says which and how to trust later. A second daemon
-- asks again; "Always trust this folder" loads them and records the folder in the daemon's trust store,
-- so a third daemon (:checkhealth's, told nothing of trust) trusts it without asking.
local h = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

local function start()
  local ready
  require('mini_agent.client').ensure(h.root, function(daemon, err)
    ready = daemon or error(err)
  end)
  h.wait('the daemon to be ready', function()
    return ready ~= nil
  end)
  return ready
end

local function tools(daemon)
  local names
  require('mini_agent.client').request(daemon, 'agent/listTools', vim.empty_dict(), function(err, result)
    names = err and error(vim.inspect(err)) or vim.tbl_map(function(tool)
      return tool.name
    end, result.tools)
  end)
  h.wait('agent/listTools', function()
    return names ~= nil
  end)
  table.sort(names)
  return names
end

local function stop()
  require('mini_agent.client').stop(10000)
  h.eq(0, #require('mini_agent.client').running(), 'daemons left running')
end

h.run(function()
  vim.fn.writefile({ '[tool.mini-agent]', 'tools = ["tools.py"]' }, h.root .. '/pyproject.toml')
  h.load_plugin()
  local warnings = {}
  local notify = vim.notify
  vim.notify = function(msg, level, ...)
    if level == vim.log.levels.WARN then
      table.insert(warnings, msg)
    end
    return notify(msg, level, ...)
  end
  require('mini_agent').setup({ cmd = h.daemon_cmd(), llm = { baseUrl = h.base_url, model = 'replay' } })
  local prompts, answers = {}, { 3, 2 }
  vim.ui.select = function(items, opts, on_choice)
    table.insert(prompts, { prompt = opts.prompt, kind = opts.kind, items = vim.tbl_map(opts.format_item, items) })
    on_choice(items[table.remove(answers, 1)])
  end

  local daemon = start()
  h.eq(1, #prompts, 'asked once')
  h.eq('mini_agent.trust', prompts[1].kind, 'the select kind')
  h.eq({ 'Trust this folder for this session', 'Always trust this folder', "Don't trust" }, prompts[1].items, 'choices')
  h.find(prompts[1].prompt, 'trust ' .. h.root .. '? It would run: tools file tools.py')
  h.eq({}, tools(daemon), 'no tools without trust')
  h.find(warnings[1] or '', 'is not trusted, so these wait: tools file tools.py. :MiniAgentTrust trusts it later.')
  stop()

  daemon = start()
  h.eq(2, #prompts, 'a new daemon asks again')
  h.eq({ 'count_file_lines', 'list_python_files' }, tools(daemon), 'the trusted folder tools')
  stop()

  vim.cmd('checkhealth mini_agent')
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  vim.cmd('bwipeout!')
  h.find(report, 'OK the daemon trusts this folder: "Always trust" is remembered in its trust store')
  h.eq(2, #prompts, 'no more prompts')
end)
