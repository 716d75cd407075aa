--- One daemon per workspace root, started with the built-in LSP client and attached to no buffer.
---
--- Work asked for before the daemon has answered `initialize` waits in a queue, so callers never
--- block: everything here takes a callback.
local config = require('mini_agent.config')
local log = require('mini_agent.log')
local text = require('mini_agent.text')

local M = {}

local NOTIFY_LEVELS = { vim.log.levels.ERROR, vim.log.levels.WARN, vim.log.levels.INFO, vim.log.levels.DEBUG }

---@class mini_agent.Daemon
---@field root string
---@field id integer? the vim.lsp client id
---@field ready boolean initialize answered
---@field exited boolean
---@field stopping boolean we asked it to stop
---@field queue fun(daemon: mini_agent.Daemon?, err: string?)[]
---@field agent table? capabilities.experimental.agent
---@field tools table[] the last agent/toolsChanged

---@type table<string, mini_agent.Daemon>
local daemons = {}

--- How long quitting Neovim waits for the daemons to answer shutdown and exit.
M.QUIT_WAIT_MS = 1000

--- How long completing :MiniAgentModel waits for the daemon's model list (the daemon gives the
--- model server 2 s); past it, the completion offers the current model alone.
M.COMPLETE_WAIT_MS = 3000

local function flush(daemon, err)
  local queue = daemon.queue
  daemon.queue = {}
  for _, callback in ipairs(queue) do
    if err then
      callback(nil, err)
    else
      callback(daemon)
    end
  end
end

local function log_tail(lines)
  local path = log.path()
  if vim.fn.filereadable(path) == 0 then
    return ''
  end
  local all = vim.fn.readfile(path, '', -lines)
  return table.concat(all, '\n')
end

local function handlers()
  return {
    ['agent/update'] = function(_, params, ctx)
      require('mini_agent.sessions').on_update(params, ctx.client_id)
    end,
    ['agent/toolsChanged'] = function(_, params, ctx)
      require('mini_agent.sessions').on_tools_changed(params, ctx.client_id)
    end,
    ['agent/requestPermission'] = function(_, params, ctx)
      return require('mini_agent.approval').handle(params, ctx)
    end,
    ['agent/elicit'] = function(_, params)
      return require('mini_agent.elicit').handle(params)
    end,
    ['window/logMessage'] = log.on_log_message,
    ['window/showMessage'] = function(_, params)
      log.write('showMessage ' .. tostring(params.message))
      text.notify(params.message, NOTIFY_LEVELS[params.type] or vim.log.levels.INFO)
    end,
  }
end

local function on_exit(daemon, code, signal)
  daemon.exited, daemon.ready = true, false
  log.write(('daemon exited (code %s, signal %s)'):format(code, signal))
  local why = ('the mini-agent daemon exited (code %s); its log (:MiniAgentLog) ends with:\n%s'):format(
    code,
    log_tail(5)
  )
  flush(daemon, why)
  if not daemon.stopping then
    local note = ('daemon exited (code %s), see :MiniAgentLog'):format(code)
    require('mini_agent.sessions').on_daemon_exit(daemon.root, note)
    if config.get().notify then
      text.notify(why, vim.log.levels.ERROR)
    end
  end
end

--- Ask whether to trust the daemon's folder when its initialize answer says something waits for
--- trust (mini_agent.trust), then `done()`; otherwise `done()` at once.
---@param daemon mini_agent.Daemon
---@param done fun()
local function settle_trust(daemon, done)
  local trust = require('mini_agent.trust')
  if not trust.needed(daemon.agent, daemon.root) then
    done()
    return
  end
  local request = function(method, params, callback)
    M.request(daemon, method, params, callback)
  end
  trust.ask(daemon, request, function(choice, err)
    if err then
      text.notify('mini-agent: could not trust the folder: ' .. err.message, vim.log.levels.ERROR)
    elseif not choice then
      local left_out = table.concat(vim.tbl_get(daemon.agent, 'trust', 'wouldRun') or {}, '; ')
      log.write('folder not trusted; left out: ' .. left_out)
      text.notify(('mini-agent: %s is not trusted, so these wait: %s. :MiniAgentTrust trusts it later.'):format(
        daemon.root,
        left_out
      ), vim.log.levels.WARN)
    else
      log.write(('folder trusted (%s)'):format(choice.label))
    end
    done()
  end)
end

--- The built-in client's capabilities (window/showDocument included: its handler opens an external
--- link with vim.ui.open) plus the agent's: this plugin answers `agent/elicit`.
local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.experimental = vim.tbl_extend('force', caps.experimental or {}, {
    agent = { elicitation = require('mini_agent.elicit').capability() },
  })
  return caps
end

local function start(lsp_config)
  return vim.lsp.start(lsp_config, {
    attach = false,
    reuse_client = function()
      return false
    end,
  })
end

---@param root string
---@return mini_agent.Daemon? daemon
---@return string? err
local function spawn(root)
  local opts = config.get()
  local cmd, why = config.cmd(root)
  if not cmd then
    return nil, why
  end
  local daemon = { root = root, ready = false, exited = false, stopping = false, queue = {}, tools = {} }
  local env = vim.tbl_extend(
    'force',
    { MINI_AGENT_LOG = opts.log_level, MINI_AGENT_LOG_FILE = log.path() },
    opts.cmd_env or {}
  )
  log.write(('daemon starting in %s: %s'):format(root, table.concat(cmd, ' ')))
  local ok, id = pcall(start, {
    name = 'mini-agent',
    cmd = log.wrap(cmd),
    cmd_env = env,
    cmd_cwd = root,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = config.init_options(root),
    capabilities = capabilities(),
    handlers = handlers(),
    on_init = function(client, result)
      daemon.agent = vim.tbl_get(result or {}, 'capabilities', 'experimental', 'agent')
      log.write(('daemon ready: %s %s'):format(client.name, vim.tbl_get(result or {}, 'serverInfo', 'version') or ''))
      -- the work waiting for this daemon waits for the trust answer too: it may need the folder's tools
      vim.schedule(function()
        settle_trust(daemon, function()
          daemon.ready = not daemon.exited
          flush(daemon)
        end)
      end)
    end,
    on_exit = function(code, signal)
      vim.schedule(function()
        on_exit(daemon, code, signal)
      end)
    end,
  })
  if not ok or not id then
    return nil, ('could not start %s: %s'):format(table.concat(cmd, ' '), tostring(id))
  end
  daemon.id = id
  return daemon
end

--- vim.lsp's own exit handler sends shutdown but does not wait for the answer, so Neovim is gone
--- before the daemon could be told to exit and it finds a closed pipe instead; wait a moment.
local function stop_on_quit()
  vim.api.nvim_create_autocmd('VimLeavePre', {
    group = vim.api.nvim_create_augroup('mini_agent_quit', { clear = true }),
    callback = function()
      M.stop(M.QUIT_WAIT_MS)
    end,
  })
end

--- The running daemon for a root, if any.
---@param root string
---@return mini_agent.Daemon?
function M.get(root)
  local daemon = daemons[root]
  if daemon and not daemon.exited then
    return daemon
  end
end

--- Call back with the daemon for a root once it is initialized, starting it if needed.
---@param root string
---@param callback fun(daemon: mini_agent.Daemon?, err: string?)
function M.ensure(root, callback)
  local daemon = M.get(root)
  if not daemon then
    local err
    daemon, err = spawn(root)
    if not daemon then
      callback(nil, err)
      return
    end
    if vim.tbl_isempty(daemons) then
      stop_on_quit()
    end
    daemons[root] = daemon
  end
  if daemon.ready then
    callback(daemon)
  else
    table.insert(daemon.queue, callback)
  end
end

---@param daemon mini_agent.Daemon
---@param method string
---@param params table?
---@param callback fun(err: table?, result: any)
---@return integer? request id
function M.request(daemon, method, params, callback)
  local client = daemon.id and vim.lsp.get_client_by_id(daemon.id)
  if not client or daemon.exited then
    callback({ code = -32099, message = 'the mini-agent daemon is not running' })
    return nil
  end
  local ok, request_id = client:request(method, params or vim.empty_dict(), function(err, result)
    callback(err, result)
  end)
  if not ok then
    callback({ code = -32099, message = 'the mini-agent daemon is not running' })
    return nil
  end
  return request_id
end

---@param daemon mini_agent.Daemon
---@param method string
---@param params table
function M.notify(daemon, method, params)
  local client = daemon.id and vim.lsp.get_client_by_id(daemon.id)
  if client then
    client:notify(method, params)
  end
end

---@return mini_agent.Daemon[]
function M.running()
  return vim.tbl_filter(function(d)
    return not d.exited
  end, vim.tbl_values(daemons))
end

--- Stop every daemon this plugin started (shutdown, then exit).
---@param wait_ms integer? wait up to this long for them to exit (pumping the event loop)
function M.stop(wait_ms)
  for _, daemon in ipairs(M.running()) do
    daemon.stopping = true
    local client = vim.lsp.get_client_by_id(daemon.id)
    if client then
      client:stop()
    end
  end
  if wait_ms then
    vim.wait(wait_ms, function()
      return #M.running() == 0
    end, 10)
  end
end

---@param client_id integer
---@return mini_agent.Daemon?
function M.by_client(client_id)
  for _, daemon in pairs(daemons) do
    if daemon.id == client_id then
      return daemon
    end
  end
end

return M
