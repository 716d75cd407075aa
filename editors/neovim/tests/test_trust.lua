-- Workspace trust: `trust_workspace` (false by default, true, or a function of the root) reaches the
-- daemon as initializationOptions.workspaceTrusted, and :MiniAgentTrust sends agent/trustWorkspace {}.
-- What the daemon receives is read from a copy of its stdin (bash's `tee` in front of it). A folder
-- allowed with Neovim's :trust (vim.secure) counts as trusted.
local h = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

--- The JSON-RPC messages written to a daemon's stdin, decoded (`body`: as sent), in order.
local function received(path)
  local text = table.concat(vim.fn.readfile(path, 'b'), '\n')
  local messages, position = {}, 1
  while true do
    local header_end = text:find('\r\n\r\n', position, true)
    local length = header_end and tonumber(text:sub(position, header_end):match('Content%-Length: *(%d+)'))
    if not length then
      return messages
    end
    local body = text:sub(header_end + 4, header_end + 3 + length)
    table.insert(messages, vim.tbl_extend('error', vim.json.decode(body), { body = body }))
    position = header_end + 4 + length
  end
end

local function find(messages, method)
  return vim.iter(messages):find(function(message)
    return message.method == method
  end)
end

--- Start a daemon with these options (plus the recording), wait until it is ready; what it received.
local function start(opts)
  local stdin = vim.fn.tempname()
  require('mini_agent').setup(vim.tbl_extend('force', {
    cmd = { 'bash', '-c', 'exec "$@" < <(tee "$RECORD")', 'bash', h.python, '-m', 'mini_agent' },
    cmd_env = { RECORD = stdin },
    llm = { baseUrl = h.base_url, model = 'replay' },
  }, opts))
  local ready
  require('mini_agent.client').ensure(h.root, function(daemon, err)
    ready = daemon or error(err)
  end)
  h.wait('the daemon to start', function()
    return ready ~= nil
  end)
  return stdin
end

local function stop()
  require('mini_agent.client').stop(10000)
  h.eq(0, #require('mini_agent.client').running(), 'daemons left running')
end

local function trusted_at_start(stdin)
  local initialize = assert(find(received(stdin), 'initialize'), 'no initialize in ' .. stdin)
  return initialize.params.initializationOptions.workspaceTrusted
end

h.run(function()
  h.load_plugin()
  h.eq(false, trusted_at_start(start({})), 'workspaceTrusted by default')
  stop()
  h.eq(true, trusted_at_start(start({ trust_workspace = true })), 'workspaceTrusted with trust_workspace = true')
  stop()

  local asked = {}
  local function only_mine(root)
    table.insert(asked, root)
    return root == h.root
  end
  h.eq(true, trusted_at_start(start({ trust_workspace = only_mine })), 'workspaceTrusted from the function')
  h.eq({ h.root }, asked, 'the function was asked about the workspace root')
  stop()

  local ok, err = pcall(require('mini_agent').setup, { trust_workspace = 'yes' })
  assert(not ok, 'trust_workspace = "yes" was accepted')
  h.find(tostring(err), 'trust_workspace')

  -- :MiniAgentTrust sends agent/trustWorkspace with an empty object, and the daemon answers it
  local stdin = start({})
  local answered
  require('mini_agent').trust({
    root = h.root,
    on_done = function(e, result)
      answered = { err = e, result = result }
    end,
  })
  h.wait('agent/trustWorkspace to be answered', function()
    return answered ~= nil
  end)
  local request = assert(find(received(stdin), 'agent/trustWorkspace'), 'agent/trustWorkspace was not sent')
  h.find(request.body, '"params":{}')
  vim.cmd('MiniAgentTrust')
  h.wait('the command to send a second request', function()
    local sent = vim.tbl_filter(function(message)
      return message.method == 'agent/trustWorkspace'
    end, received(stdin))
    return #sent == 2
  end)
  stop()

  -- a folder allowed with Neovim's own :trust (vim.secure's database) starts trusted
  local config = require('mini_agent.config')
  local other = vim.fn.tempname()
  vim.fn.mkdir(other, 'p')
  h.eq(false, config.init_options(other).workspaceTrusted, 'another folder, before :trust')
  vim.cmd.edit(vim.fn.fnameescape(other))
  local allowed, where = vim.secure.trust({ action = 'allow', bufnr = 0 })
  assert(allowed, where)
  h.eq(true, config.init_options(other).workspaceTrusted, 'the folder allowed with :trust')
end)
