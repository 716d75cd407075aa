-- Commands and <Plug> mappings; the plugin's modules load on first use.
if vim.g.loaded_mini_agent then
  return
end
vim.g.loaded_mini_agent = true

if vim.fn.has('nvim-0.11') == 0 then
  vim.notify('mini-agent needs Neovim 0.11 or newer', vim.log.levels.WARN)
  return
end

local function agent()
  return require('mini_agent')
end

local function running_ids()
  local ids = {}
  local sessions = package.loaded['mini_agent.sessions']
  for _, id in ipairs(sessions and sessions.order or {}) do
    if sessions.sessions[id].running then
      table.insert(ids, id)
    end
  end
  return ids
end

local command = vim.api.nvim_create_user_command

command('MiniAgentAsk', function(args)
  agent().ask_command(args)
end, {
  nargs = '*',
  range = true,
  bang = true,
  complete = function(lead, line)
    return require('mini_agent.commands').complete_command_line(lead, line)
  end,
  desc = 'mini-agent: ask, going on with the conversation (! = a new one; a range: about those lines)',
})

command('MiniAgentRegister', function(args)
  agent().register(args.args, { requiresApproval = args.bang or nil })
end, {
  nargs = '?',
  bang = true,
  complete = 'file',
  desc = 'mini-agent: register a Python file as tools (! = needs approval)',
})

command('MiniAgentSessions', function()
  agent().sessions()
end, { nargs = 0, desc = "mini-agent: pick one of the daemon's sessions and show it" })

command('MiniAgentAttach', function(args)
  agent().attach(args.args)
end, { nargs = 1, complete = 'file', desc = 'mini-agent: attach an image file to the next ask' })

command('MiniAgentFork', function(args)
  agent().fork({ step = tonumber(args.args) })
end, { nargs = '?', desc = "mini-agent: fork the conversation (up to a step) and go on in the fork" })

command('MiniAgentCancel', function(args)
  agent().cancel(args.args)
end, { nargs = '?', complete = running_ids, desc = 'mini-agent: cancel the running session (default: the newest)' })

command('MiniAgentApprovals', function()
  agent().approvals()
end, { nargs = 0, desc = 'mini-agent: decide tool calls waiting for approval' })

command('MiniAgentTrust', function()
  agent().trust()
end, { nargs = 0, desc = "mini-agent: trust this workspace (its tool files may be imported)" })

command('MiniAgentModel', function(args)
  agent().model(args.args, { refresh = args.bang })
end, {
  nargs = '?',
  bang = true,
  complete = function(lead)
    return agent().complete_models(lead)
  end,
  desc = 'mini-agent: pick the model of the conversation and new sessions (! = ask the model server again)',
})

command('MiniAgentMode', function(args)
  agent().mode(args.args)
end, {
  nargs = '?',
  complete = function(lead)
    return vim.tbl_filter(function(mode)
      return vim.startswith(mode, lead)
    end, { 'ask_always', 'ask_when_needed', 'ask_never' })
  end,
  desc = 'mini-agent: pick when tool calls ask (ask_always, ask_when_needed, ask_never)',
})

command('MiniAgentLog', function()
  agent().log()
end, { nargs = 0, desc = "mini-agent: open the daemon's log" })

command('MiniAgentTrace', function()
  agent().toggle_trace()
end, { nargs = 0, desc = 'mini-agent: show or hide the trace window' })

local map = vim.keymap.set
map('n', '<Plug>(MiniAgentAsk)', '<Cmd>MiniAgentAsk<CR>', { desc = 'mini-agent: ask' })
map('x', '<Plug>(MiniAgentAsk)', ':MiniAgentAsk<CR>', { silent = true, desc = 'mini-agent: ask about the selection' })
map('n', '<Plug>(MiniAgentRegister)', '<Cmd>MiniAgentRegister<CR>', { desc = 'mini-agent: register this file' })
map('n', '<Plug>(MiniAgentSessions)', '<Cmd>MiniAgentSessions<CR>', { desc = 'mini-agent: sessions' })
map('n', '<Plug>(MiniAgentCancel)', '<Cmd>MiniAgentCancel<CR>', { desc = 'mini-agent: cancel' })
map('n', '<Plug>(MiniAgentApprovals)', '<Cmd>MiniAgentApprovals<CR>', { desc = 'mini-agent: approvals' })
map('n', '<Plug>(MiniAgentTrust)', '<Cmd>MiniAgentTrust<CR>', { desc = 'mini-agent: trust this workspace' })
map('n', '<Plug>(MiniAgentModel)', '<Cmd>MiniAgentModel<CR>', { desc = 'mini-agent: pick the model' })
map('n', '<Plug>(MiniAgentMode)', '<Cmd>MiniAgentMode<CR>', { desc = 'mini-agent: pick the permission mode' })
map('n', '<Plug>(MiniAgentLog)', '<Cmd>MiniAgentLog<CR>', { desc = 'mini-agent: log' })
map('n', '<Plug>(MiniAgentTrace)', '<Cmd>MiniAgentTrace<CR>', { desc = 'mini-agent: toggle the trace' })

vim.api.nvim_create_autocmd('ColorScheme', {
  group = vim.api.nvim_create_augroup('mini_agent_highlights', { clear = true }),
  callback = function()
    if package.loaded['mini_agent.trace'] then
      require('mini_agent.trace').define_highlights()
    end
  end,
})
