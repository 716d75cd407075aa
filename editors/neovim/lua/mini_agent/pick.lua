--- The model and the permission mode of a workspace's sessions, as picked with :MiniAgentModel and
--- :MiniAgentMode: the three modes in the words a user reads, the choices an `agent/listModels`
--- answer makes, and what this Neovim picked per workspace root (new sessions start with it).
local config = require('mini_agent.config')

local M = {}

---@class mini_agent.ModeChoice
---@field mode 'ask_always'|'ask_when_needed'|'ask_never'
---@field label string the picker's name
---@field description string

---@type mini_agent.ModeChoice[]
M.MODES = {
  {
    mode = 'ask_always',
    label = 'Ask before every tool call',
    description = 'every tool call waits for your answer, read-only ones too',
  },
  {
    mode = 'ask_when_needed',
    label = 'Ask when a tool needs approval',
    description = 'only the calls of tools that need approval wait for your answer',
  },
  {
    mode = 'ask_never',
    label = "Never ask (I'm watching)",
    description = 'calls run without asking, except one reaching outside the workspace; needs a trusted folder',
  },
}

M.DEFAULT_MODE = 'ask_when_needed'

---@class mini_agent.Picked
---@field model string? picked with :MiniAgentModel
---@field mode string? picked with :MiniAgentMode
---@field listing table? the last agent/listModels answer

---@type table<string, mini_agent.Picked>
local picked = {}

---@param root string
---@return mini_agent.Picked
function M.state(root)
  picked[root] = picked[root] or {}
  return picked[root]
end

--- The model new sessions of `root` use: the picked one, else the `llm.model` option (nil: the daemon's).
---@param root string
---@return string?
function M.model(root)
  return M.state(root).model or config.get().llm.model
end

--- The permission mode new sessions of `root` use: the picked one, else the option, else the default.
---@param root string
---@return string
function M.mode(root)
  return M.state(root).mode or config.get().permissionMode or M.DEFAULT_MODE
end

---@param mode string
---@return mini_agent.ModeChoice?
function M.mode_choice(mode)
  return vim.iter(M.MODES):find(function(choice)
    return choice.mode == mode
  end)
end

--- `agent/startSession` params with the workspace's model and permission mode added.
---@param root string
---@param params table
---@return table
function M.session_params(root, params)
  params.permissionMode = M.mode(root)
  local model = M.state(root).model
  if model then
    params.llm = vim.tbl_extend('force', params.llm or {}, { model = model })
  end
  return params
end

--- The model choices from an `agent/listModels` answer: the server's ids, with `current` first when
--- the server does not list it; and, when the server listed none (or is down), why, in the daemon's words.
---@param listing {models: {id: string}[], current: string, source: string, message: string?}
---@param current string?
---@return string[] ids
---@return string? why only the configured model
function M.model_choices(listing, current)
  local ids = vim.tbl_map(function(model)
    return model.id
  end, listing.models or {})
  current = current or listing.current
  if current and not vim.list_contains(ids, current) then
    table.insert(ids, 1, current)
  end
  local why = listing.source == 'configured' and (listing.message or 'the model server listed no models: the configured one is the only choice') or nil
  return ids, why
end

return M
