--- The trust prompt: when a daemon's `initialize` answer says its folder names things that wait for
--- trust (`capabilities.experimental.agent.trust.needed`) and the folder is not trusted, ask once with
--- vim.ui.select, listing what trusting would run, and answer with `agent/trustWorkspace`
--- (`remember`: recorded in the daemon's trust store, so the next daemon trusts the folder unasked).
local config = require('mini_agent.config')

local M = {}

---@class mini_agent.TrustChoice
---@field label string
---@field trust boolean
---@field remember boolean

---@type mini_agent.TrustChoice[]
M.CHOICES = {
  { label = 'Trust this folder for this session', trust = true, remember = false },
  { label = 'Always trust this folder', trust = true, remember = true },
  { label = "Don't trust", trust = false, remember = false },
}

--- Whether to ask: the daemon says something waits for trust, and neither it nor this Neovim trusts the folder.
---@param agent table? capabilities.experimental.agent of the initialize answer
---@param root string
---@return boolean
function M.needed(agent, root)
  local trust = agent and agent.trust
  return type(trust) == 'table' and trust.needed == true and trust.trusted ~= true and not config.trusted(root)
end

--- The prompt's text: the folder and what trusting it would run.
---@param root string
---@param would_run string[]?
---@return string
function M.prompt(root, would_run)
  -- each on one line, as written: a workspace file wrote them (a newline or a carriage return in a
  -- command line could make it look like another)
  local line = require('mini_agent.text').line
  local listed = (would_run and #would_run > 0) and table.concat(vim.tbl_map(line, would_run), '; ')
    or 'its configured tools'
  return ('mini-agent: trust %s? It would run: %s'):format(line(root), listed)
end

--- Ask about the daemon's folder, then call `done(choice)` once the daemon has the answer (or the
--- user declined, or dismissed the prompt: nil choice).
---@param daemon mini_agent.Daemon
---@param request fun(method: string, params: table, callback: fun(err: table?, result: table?))
---@param done fun(choice: mini_agent.TrustChoice?, err: table?, result: table?)
function M.ask(daemon, request, done)
  local would_run = vim.tbl_get(daemon.agent or {}, 'trust', 'wouldRun')
  local select_opts = {
    prompt = M.prompt(daemon.root, would_run),
    kind = 'mini_agent.trust',
    format_item = function(choice)
      return choice.label
    end,
  }
  require('mini_agent.text').select(M.CHOICES, select_opts, function(choice)
    if not choice or not choice.trust then
      done(nil)
      return
    end
    request('agent/trustWorkspace', { remember = choice.remember }, function(err, result)
      if not err then
        config.trust(daemon.root)
      end
      done(choice, err, result)
    end)
  end)
end

return M
