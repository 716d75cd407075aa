-- :MiniAgentModel and :MiniAgentMode against the real daemon and the scripted model server (which
-- lists one model, "replay"; the plugin is configured with "first"). The model picker offers both,
-- the current one marked; picking the 2nd switches the conversation, and the next model request
-- carries it (the daemon's log names the model of each request). :MiniAgentMode picks "Ask before
-- every tool call": a new session starts in it, with the picked model, and a tool that never needs
-- approval asks. Both commands complete their arguments; :checkhealth shows the model and the mode.
local h = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

local errors = {}

local function ask(task, opts)
  local result
  require('mini_agent').ask(task, vim.tbl_extend('force', opts or {}, {
    on_done = function(err, res)
      result = { err = err, res = res }
    end,
  }))
  h.wait('the session "' .. task .. '" to end', function()
    return result ~= nil or #errors > 0
  end)
  assert(#errors == 0 and not result.err, vim.inspect({ errors = errors, result = result }))
  return result.res
end

local function request(method, params)
  local daemon = assert(require('mini_agent.client').get(h.root), 'no daemon')
  local reply
  require('mini_agent.client').request(daemon, method, params, function(err, result)
    reply = { err = err, result = result }
  end)
  h.wait(method, function()
    return reply ~= nil
  end)
  assert(not reply.err, vim.inspect(reply.err))
  return reply.result
end

local function daemon_log()
  return table.concat(vim.fn.readfile(require('mini_agent.log').path()), '\n')
end

h.run(function()
  h.load_plugin()
  local notify = vim.notify
  vim.notify = function(msg, level, ...)
    if level == vim.log.levels.ERROR then
      table.insert(errors, msg)
    end
    return notify(msg, level, ...)
  end
  require('mini_agent').setup({ cmd = h.daemon_cmd(), llm = { baseUrl = h.base_url, model = 'first' } })
  local picks = require('mini_agent.pick')

  local prompts, answers = {}, {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(prompts, { prompt = opts.prompt, kind = opts.kind, items = vim.tbl_map(opts.format_item, items) })
    table.remove(answers, 1)(items, on_choice)
  end

  local first = ask('Say something')
  h.eq('the first answer', first.finalAnswer, 'the first answer')
  h.find(daemon_log(), 'model requests go to ' .. h.base_url .. ' (model first,')

  -- the picker lists the server's model after the current one, and the 2nd choice switches to it
  table.insert(answers, function(items, on_choice)
    on_choice(items[2])
  end)
  vim.cmd('MiniAgentModel')
  h.wait('the model to be picked', function()
    return picks.state(h.root).model ~= nil or #errors > 0
  end)
  h.eq({ 'first  (current)', 'replay' }, prompts[1].items, 'the model choices')
  h.eq('mini_agent.model', prompts[1].kind, 'the select kind')
  h.find(prompts[1].prompt, h.base_url)
  h.eq('replay', picks.state(h.root).model, 'the picked model')
  h.eq({ 'replay' }, vim.fn.getcompletion('MiniAgentModel re', 'cmdline'), 'model completion')

  local second = ask('And again?', { continue = true })
  h.eq(first.sessionId, second.sessionId, 'the follow-up stays in the conversation')
  h.eq('the second answer', second.finalAnswer, 'the second answer')
  h.find(daemon_log(), 'model requests go to ' .. h.base_url .. ' (model replay,')
  h.eq('replay', request('agent/getSession', { sessionId = first.sessionId }).llm.model, 'the session model')

  -- the mode picker: the three modes in words, the current one marked; pick "Ask before every tool call"
  h.eq({ 'ask_when_needed' }, vim.fn.getcompletion('MiniAgentMode ask_w', 'cmdline'), 'mode completion')
  table.insert(answers, function(items, on_choice)
    on_choice(items[1])
  end)
  vim.cmd('MiniAgentMode')
  h.wait('the mode to be picked', function()
    return picks.state(h.root).mode ~= nil or #errors > 0
  end)
  h.find(prompts[2].items[1], 'Ask before every tool call')
  h.find(prompts[2].items[2], 'Ask when a tool needs approval')
  h.find(prompts[2].items[2], '(current)')
  h.find(prompts[2].items[3], "Never ask (I'm watching)")
  h.eq('ask_always', request('agent/getSession', { sessionId = first.sessionId }).permissionMode, 'the conversation mode')

  -- a new session starts with both; a tool that needs no approval asks now
  local registered
  require('mini_agent').register(h.root .. '/tools.py', {
    on_done = function(err, result)
      registered = err or result
    end,
  })
  h.wait('tools.py to register', function()
    return registered ~= nil
  end)
  for _, tool in ipairs(registered.tools) do
    assert(not tool.requiresApproval, tool.name .. ' needs no approval of its own')
  end
  table.insert(answers, function(items, on_choice)
    on_choice(items[1]) -- allow once
  end)
  local counted = ask('Count the lines of schema.py')
  h.find(prompts[3].prompt or '', 'count_file_lines')
  h.eq(('schema.py has %d lines.'):format(h.non_blank_lines(h.root .. '/schema.py')), counted.finalAnswer, 'answer')
  local session = request('agent/getSession', { sessionId = counted.sessionId })
  h.eq({ 'replay', 'ask_always' }, { session.llm.model, session.permissionMode }, 'the new session')

  vim.cmd('checkhealth mini_agent')
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  vim.cmd('bwipeout!')
  h.find(report, 'current model: replay; permission mode: ask_always (Ask before every tool call)')
end)
