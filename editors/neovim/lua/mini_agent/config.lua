--- Options: defaults, validation, and what they resolve to for one workspace.
---
--- Options that go to the daemon keep their wire spelling (`llm.baseUrl`, `maxSteps`), so what a
--- user reads in the protocol reference is what they write here; options of the plugin itself are
--- snake_case.
local M = {}

---@class mini_agent.TraceOptions
---@field open boolean open the trace window when a session starts
---@field position 'right'|'left'|'above'|'below'
---@field size integer? width (left/right) or height (above/below); nil: half the editor
---@field observation_lines integer observation lines shown before the rest is folded away
---@field follow boolean keep trace windows scrolled to the end

---@class mini_agent.Options
---@field cmd string[]|fun(root: string): string[]|nil the daemon; nil: `mini-agent serve` from .venv/bin, then PATH
---@field cmd_env table<string, string>? extra environment for the daemon
---@field root_dir string|fun(bufnr: integer): string?|nil the workspace root; nil: from root_markers, else the cwd
---@field root_markers string[]
---@field llm table? model options (`baseUrl`, `model`, `apiKey`, `toolMode`, …); apiKey falls back to $OPENAI_API_KEY
---@field maxSteps integer?
---@field permissionMode 'ask_always'|'ask_when_needed'|'ask_never'|nil new sessions' mode; nil: the daemon's (ask_when_needed)
---@field systemPrompt string?
---@field tools table? tool host options (`timeoutSec`, `maxOutputBytes`)
---@field store table? session store options (`path`, `enabled`)
---@field log_level string the daemon's log level (MINI_AGENT_LOG)
---@field log_file string? where the daemon's log goes; nil: stdpath('log')/mini-agent.log
---@field notify boolean notify answers (trace hidden) and runs that end without one
---@field trust_workspace boolean|fun(root: string): boolean may the daemon run the workspace's code at start
---@field trace mini_agent.TraceOptions

---@type mini_agent.Options
M.defaults = {
  cmd = nil,
  cmd_env = nil,
  root_dir = nil,
  root_markers = { '.mini-agent', '.git', 'pyproject.toml' },
  llm = {},
  maxSteps = nil,
  permissionMode = nil,
  systemPrompt = nil,
  tools = nil,
  store = nil,
  log_level = 'INFO',
  log_file = nil,
  notify = true,
  trust_workspace = false,
  trace = {
    open = true,
    position = 'right',
    size = nil,
    observation_lines = 6,
    follow = true,
  },
}

local TOOL_MODES = { react = true, native = true, json = true, auto = true }
--- The permission modes of the protocol (agent/configureSession); see mini_agent.pick for their names.
M.PERMISSION_MODES = { ask_always = true, ask_when_needed = true, ask_never = true }
local POSITIONS = { right = true, left = true, above = true, below = true }

---@type mini_agent.Options?
local current = nil

---@type table<string, true> roots trusted with :MiniAgentTrust in this Neovim
local trusted = {}

local check = vim.validate

local function positive_integer(value)
  return type(value) == 'number' and value >= 1 and math.floor(value) == value
end

local function string_list(value)
  return vim.islist(value) and vim.iter(value):all(function(item)
    return type(item) == 'string'
  end)
end

---@param opts mini_agent.Options
local function validate(opts)
  check('cmd', opts.cmd, function(v)
    return v == nil or type(v) == 'function' or (string_list(v) and #v > 0)
  end, false, 'a non-empty list of strings or a function')
  check('cmd_env', opts.cmd_env, 'table', true)
  check('root_dir', opts.root_dir, { 'string', 'function' }, true)
  check('root_markers', opts.root_markers, string_list, false, 'a list of strings')
  check('llm', opts.llm, 'table')
  check('llm.baseUrl', opts.llm.baseUrl, 'string', true)
  check('llm.model', opts.llm.model, 'string', true)
  check('llm.apiKey', opts.llm.apiKey, 'string', true)
  check('llm.toolMode', opts.llm.toolMode, function(v)
    return v == nil or TOOL_MODES[v] ~= nil
  end, false, '"react", "native", "json" or "auto"')
  check('maxSteps', opts.maxSteps, function(v)
    return v == nil or positive_integer(v)
  end, false, 'a positive integer')
  check('permissionMode', opts.permissionMode, function(v)
    return v == nil or M.PERMISSION_MODES[v] ~= nil
  end, false, '"ask_always", "ask_when_needed" or "ask_never"')
  check('systemPrompt', opts.systemPrompt, 'string', true)
  check('tools', opts.tools, 'table', true)
  check('store', opts.store, 'table', true)
  check('log_level', opts.log_level, 'string')
  check('log_file', opts.log_file, 'string', true)
  check('notify', opts.notify, 'boolean')
  check('trust_workspace', opts.trust_workspace, { 'boolean', 'function' })
  check('trace', opts.trace, 'table')
  check('trace.open', opts.trace.open, 'boolean')
  check('trace.position', opts.trace.position, function(v)
    return POSITIONS[v] ~= nil
  end, false, '"right", "left", "above" or "below"')
  check('trace.size', opts.trace.size, function(v)
    return v == nil or positive_integer(v)
  end, false, 'a positive integer')
  check('trace.observation_lines', opts.trace.observation_lines, positive_integer, false, 'a positive integer')
  check('trace.follow', opts.trace.follow, 'boolean')
end

--- Merge user options over the defaults and validate them; raises on a bad option.
---@param user table?
---@return mini_agent.Options
function M.merge(user)
  check('opts', user, 'table', true)
  local opts = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), user or {})
  validate(opts)
  return opts
end

---@param user table?
function M.set(user)
  current = M.merge(user)
end

--- The options in force: those given to setup(), else `vim.g.mini_agent`, else the defaults.
---@return mini_agent.Options
function M.get()
  if current == nil then
    current = M.merge(type(vim.g.mini_agent) == 'table' and vim.g.mini_agent or nil)
  end
  return current
end

local function normalize(path)
  local full = vim.fs.normalize(vim.fn.fnamemodify(path, ':p'))
  return (full:gsub('(.)/$', '%1'))
end

--- The workspace root for a buffer: the option, else the nearest root marker, else the cwd.
---@param bufnr integer?
---@return string
function M.root(bufnr)
  local opts = M.get()
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local root = opts.root_dir
  if type(root) == 'function' then
    root = root(bufnr)
  end
  if root == nil and vim.bo[bufnr].buftype == '' and vim.api.nvim_buf_get_name(bufnr) ~= '' then
    root = vim.fs.root(bufnr, opts.root_markers)
  end
  return normalize(root or vim.fn.getcwd())
end

--- `mini-agent serve` from the workspace's virtual environment, else from PATH.
---@param root string
---@return string[]? cmd
---@return string? why not found
function M.cmd(root)
  local opts = M.get()
  if type(opts.cmd) == 'function' then
    local cmd = opts.cmd(root)
    return cmd, (not cmd) and 'the cmd option returned no command' or nil
  elseif opts.cmd then
    return vim.deepcopy(opts.cmd)
  end
  local is_windows = vim.fn.has('win32') == 1
  local local_bin = is_windows and (root .. '/.venv/Scripts/mini-agent.exe') or (root .. '/.venv/bin/mini-agent')
  if vim.fn.executable(local_bin) == 1 then
    return { local_bin, 'serve' }
  end
  local on_path = vim.fn.exepath('mini-agent')
  if on_path ~= '' then
    return { on_path, 'serve' }
  end
  return nil,
    'mini-agent not found in ' .. local_bin .. ' nor on PATH: `pip install mini-agent` there, or set the `cmd` option'
end

--- Drop empty tables: vim.json encodes them as [] where the daemon expects objects.
---@param values table
---@return table?
function M.compact(values)
  local out = {}
  for key, value in pairs(values) do
    if not (type(value) == 'table' and vim.tbl_isempty(value)) then
      out[key] = value
    end
  end
  return not vim.tbl_isempty(out) and out or nil
end

--- Remember that the user trusted a root, so that a daemon started again for it starts trusted.
---@param root string
function M.trust(root)
  trusted[root] = true
end

--- Whether Neovim's own trust database (|:trust|, |vim.secure|) allows the folder `root` itself.
--- vim.secure offers no query that never prompts, so its file is read as vim.secure reads it.
---@param root string
---@return boolean
function M.secure_trusted(root)
  local real = vim.uv.fs_realpath(root)
  local file = io.open(vim.fn.stdpath('state') .. '/trust', 'r')
  if not real or not file then
    return false
  end
  local contents = file:read('*a') or ''
  file:close()
  for line in vim.gsplit(contents, '\n') do
    local hash, path = line:match('^(%S+) (.+)$')
    if path == real then
      return hash == 'directory'
    end
  end
  return false
end

--- Whether the daemon for `root` may import the workspace's files when it starts: the
--- `trust_workspace` option, a trust given in this Neovim, or the folder allowed with |:trust|.
---@param root string
---@return boolean
function M.trusted(root)
  local option = M.get().trust_workspace
  if type(option) == 'function' then
    option = option(root)
  end
  return option == true or trusted[root] == true or M.secure_trusted(root)
end

--- initializationOptions for the daemon of `root`: the wire options that are set.
---@param root string
---@return table
function M.init_options(root)
  local opts = M.get()
  local llm = vim.deepcopy(opts.llm)
  if llm.apiKey == nil and vim.env.OPENAI_API_KEY and vim.env.OPENAI_API_KEY ~= '' then
    llm.apiKey = vim.env.OPENAI_API_KEY
  end
  return M.compact({
    llm = llm,
    maxSteps = opts.maxSteps,
    systemPrompt = opts.systemPrompt,
    tools = opts.tools,
    store = opts.store,
    workspaceTrusted = M.trusted(root),
  }) --[[@as table]]
end

---@return string
function M.log_file()
  return M.get().log_file or (vim.fn.stdpath('log') .. '/mini-agent.log')
end

return M
