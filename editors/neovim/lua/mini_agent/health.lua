--- :checkhealth mini_agent — Neovim version, options, the daemon command (started for real and
--- asked `initialize`), its Python, where the model server and the log are, and the current model
--- and permission mode.
local config = require('mini_agent.config')

local M = {}

local health = vim.health
local HANDSHAKE_MS = 15000

local function frame(message)
  local body = vim.json.encode(message)
  return ('Content-Length: %d\r\n\r\n%s'):format(#body, body)
end

--- The framed message in `text` that answers `id`, decoded.
local function response(text, id)
  local position = 1
  while true do
    local header_end = text:find('\r\n\r\n', position, true)
    local length = header_end and tonumber(text:sub(position, header_end):match('Content%-Length:%s*(%d+)'))
    if not length then
      return nil
    end
    local body = text:sub(header_end + 4, header_end + 3 + length)
    local ok, message = pcall(vim.json.decode, body)
    if ok and type(message) == 'table' and message.id == id then
      return message
    end
    position = header_end + 4 + length
  end
end

--- Start the daemon, send initialize, then shutdown and exit; the initialize result or why not.
---@return table? result
---@return string? err
local function handshake(cmd, root)
  local opts = config.get()
  local out, err = {}, {}
  local env = vim.tbl_extend('force', { MINI_AGENT_LOG = 'WARNING' }, opts.cmd_env or {})
  local ok, proc = pcall(vim.system, cmd, {
    stdin = true,
    cwd = root,
    env = env,
    stdout = function(_, data)
      table.insert(out, data)
    end,
    stderr = function(_, data)
      table.insert(err, data)
    end,
  })
  if not ok then
    return nil, tostring(proc)
  end
  proc:write(frame({
    jsonrpc = '2.0',
    id = 1,
    method = 'initialize',
    params = { processId = vim.fn.getpid(), rootUri = vim.uri_from_fname(root), capabilities = vim.empty_dict() },
  }))
  local reply
  vim.wait(HANDSHAKE_MS, function()
    reply = response(table.concat(out), 1)
    return reply ~= nil or proc:is_closing()
  end, 50)
  if reply then
    proc:write(frame({ jsonrpc = '2.0', id = 2, method = 'shutdown' }))
    vim.wait(5000, function()
      return response(table.concat(out), 2) ~= nil
    end, 50)
    proc:write(frame({ jsonrpc = '2.0', method = 'exit' }))
  end
  proc:write(nil)
  proc:wait(3000) -- kills the process if it has not exited by then
  if not reply then
    return nil, ('no answer to initialize within %d s; stderr: %s'):format(HANDSHAKE_MS / 1000, table.concat(err))
  end
  if reply.error then
    return nil, vim.inspect(reply.error)
  end
  return reply.result
end

--- The interpreter behind a command: itself when it is python, else its script's shebang.
---@param cmd string[]
---@return string?
local function python_of(cmd)
  local exe = vim.fn.exepath(cmd[1])
  if exe == '' then
    return nil
  end
  if vim.fs.basename(exe):match('^python') then
    return exe
  end
  local first = vim.fn.readfile(exe, '', 1)[1] or ''
  local interpreter, argument = first:match('^#!%s*(%S+)%s*(%S*)')
  if interpreter and vim.fs.basename(interpreter) == 'env' and argument ~= '' then
    interpreter = vim.fn.exepath(argument)
  end
  if interpreter and vim.fs.basename(interpreter):match('^python') then
    return interpreter
  end
end

local function check_python(cmd)
  local python = python_of(cmd)
  if not python then
    health.info('could not tell which Python runs ' .. cmd[1])
    return
  end
  local result = vim.system({ python, '--version' }, { text = true }):wait(5000)
  local version = vim.trim((result.stdout or '') .. (result.stderr or ''))
  local major, minor = version:match('(%d+)%.(%d+)')
  if result.code ~= 0 or not major then
    health.error(('%s does not run: %s'):format(python, version))
  elseif tonumber(major) < 3 or (tonumber(major) == 3 and tonumber(minor) < 11) then
    health.warn(('%s is %s; mini-agent needs Python 3.11 or newer'):format(python, version))
  else
    health.ok(('%s (%s)'):format(version, python))
  end
end

function M.check()
  health.start('mini-agent: Neovim')
  local v = vim.version()
  local text = ('%d.%d.%d'):format(v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.11') == 1 then
    health.ok('Neovim ' .. text)
  else
    health.error('Neovim ' .. text .. ' is too old', { 'mini-agent needs Neovim 0.11 or newer' })
  end

  health.start('mini-agent: options')
  local ok, err = pcall(config.get)
  if not ok then
    health.error('invalid options: ' .. tostring(err), { 'fix the table given to setup() or vim.g.mini_agent' })
    return
  end
  health.ok('options are valid')

  health.start('mini-agent: daemon')
  local root = config.root()
  health.info('workspace root: ' .. root)
  if config.trusted(root) then
    health.info('trusted: the daemon restores the stored tool registrations when it starts')
  else
    health.info('not trusted: stored tool registrations wait for :MiniAgentTrust (or the trust_workspace option)')
  end
  local cmd, why = config.cmd(root)
  if not cmd then
    health.error(why, {
      'pip install mini-agent (into the workspace .venv or onto PATH)',
      'or set `cmd`, e.g. { "python3", "-m", "mini_agent" }',
    })
    return
  end
  if vim.fn.executable(cmd[1]) == 0 then
    health.error(cmd[1] .. ' is not executable')
    return
  end
  health.ok('command: ' .. table.concat(cmd, ' '))
  local result, failure = handshake(cmd, root)
  if result then
    local agent = vim.tbl_get(result, 'capabilities', 'experimental', 'agent') or {}
    health.ok(('the daemon starts and answers initialize: %s %s, protocol v%s'):format(
      vim.tbl_get(result, 'serverInfo', 'name') or '?',
      vim.tbl_get(result, 'serverInfo', 'version') or '?',
      tostring(agent.protocolVersion or '?')
    ))
    local sandbox = agent.sandbox
    if type(sandbox) == 'table' and sandbox.state == 'on' then
      health.ok(('tool sandbox: on (%s; Landlock ABI %s)'):format(sandbox.detail, tostring(sandbox.landlockAbi)))
    elseif type(sandbox) == 'table' and sandbox.state == 'unavailable' then
      health.error('tool sandbox: ' .. sandbox.detail, {
        'tool calls fail until the kernel offers it; the user-level `tools = { sandbox = "off" }` runs them unconfined',
      })
    elseif type(sandbox) == 'table' then
      health.warn(('tool sandbox: %s (%s)'):format(sandbox.state, sandbox.detail), { 'see docs/sandbox.md' })
    end
    local trust = agent.trust
    if type(trust) == 'table' and trust.remembered then
      health.ok('the daemon trusts this folder: "Always trust" is remembered in its trust store')
    elseif type(trust) == 'table' and trust.needed and not trust.trusted then
      health.warn('the folder is not trusted; trusting it would run: ' .. table.concat(trust.wouldRun or {}, '; '), {
        'answer the trust prompt when the daemon starts, or :MiniAgentTrust, or `mini-agent trust ' .. root .. '`',
      })
    end
  else
    health.error('the daemon did not start: ' .. failure, { 'see :MiniAgentLog and try the command in a shell' })
  end

  health.start('mini-agent: Python')
  check_python(cmd)

  health.start('mini-agent: model server')
  local llm = config.init_options(root).llm or {}
  health.info(('baseUrl: %s, model: %s, toolMode: %s, API key: %s'):format(
    llm.baseUrl or '(daemon default)',
    llm.model or '(daemon default)',
    llm.toolMode or '(daemon default)',
    llm.apiKey and 'set' or 'not set'
  ))
  local picks = require('mini_agent.pick')
  local mode = picks.mode_choice(picks.mode(root)) or picks.mode_choice(picks.DEFAULT_MODE)
  health.info(('current model: %s; permission mode: %s (%s) — :MiniAgentModel and :MiniAgentMode change them'):format(
    picks.model(root) or '(daemon default)',
    mode.mode,
    mode.label
  ))
  health.info('log: ' .. config.log_file())
end

return M
