--- mini-agent for Neovim: ask the daemon to run tool-using agents, and watch them work.
---
--- Every action is asynchronous: it returns at once and reports through the trace buffer,
--- notifications, `User` autocmds and, where given, an `on_done(err, result)` callback.
local client = require('mini_agent.client')
local commands = require('mini_agent.commands')
local config = require('mini_agent.config')
local picks = require('mini_agent.pick')
local sessions = require('mini_agent.sessions')
local trace = require('mini_agent.trace')

local M = {}

---@alias mini_agent.Done fun(err: table?, result: table?)

local REGISTER_KEYS = { 'function', 'name', 'description', 'requiresApproval', 'idempotent', 'timeoutSec' }
local SESSION_KEYS = { 'maxSteps', 'tools', 'systemPrompt' }

---@type table<string, string> registered file -> workspace root
local registered = {}

local function notify(text, level)
  if config.get().notify or level == vim.log.levels.ERROR then
    require('mini_agent.text').notify('mini-agent: ' .. text, level or vim.log.levels.INFO)
  end
end

local function pick(source, keys)
  local out = {}
  for _, key in ipairs(keys) do
    out[key] = source[key]
  end
  return out
end

--- Run `fn` with the daemon of `root`; a daemon that cannot start is reported and ends the action.
local function with_daemon(root, done, fn)
  client.ensure(root, function(daemon, err)
    if not daemon then
      notify(err, vim.log.levels.ERROR)
      done({ message = err })
      return
    end
    fn(daemon)
  end)
end

local function ignore() end

---@param tools table[]? ToolInfo list
---@return string
local function tool_names(tools)
  local names = vim.tbl_map(function(tool)
    return tool.name
  end, tools or {})
  return #names > 0 and table.concat(names, ', ') or 'no tools'
end

--- Set options (see :h mini-agent-config). Optional: without it, `vim.g.mini_agent` or the defaults apply.
---@param opts table?
function M.setup(opts)
  config.set(opts)
end

---@param daemon mini_agent.Daemon
---@param session mini_agent.Session
---@param done mini_agent.Done?
local function run(daemon, session, done)
  session.running, session.answer, session.on_done = true, {}, done
  local params = { sessionId = session.id, workDoneToken = 'mini-agent/' .. session.id }
  client.request(daemon, 'agent/run', params, function(err, result)
    sessions.finish_run(session, err, result)
  end)
end

---@type table<string, string> root -> the session :MiniAgentAsk talks to there (the conversation)
local conversations = {}

---@type table<string, {mimeType: string, data: string}[]> root -> images for the next ask there
local attachments = {}
local IMAGE_TYPES = { png = 'image/png', jpg = 'image/jpeg', jpeg = 'image/jpeg', gif = 'image/gif', webp = 'image/webp' }
local MAX_IMAGE_BYTES = 5 * 1024 * 1024 -- the daemon's bound too; refused here before it is read whole

--- Attach an image file to the next :MiniAgentAsk of the workspace (sent as an image part in native
--- mode; the daemon says what it left out in the others).
---@param path string
---@param opts {root: string?}?
---@return boolean attached
function M.attach(path, opts)
  local root = (opts or {}).root or config.root()
  local file = vim.fn.fnamemodify(vim.fn.expand(path), ':p')
  local mime = IMAGE_TYPES[(vim.fn.fnamemodify(file, ':e') or ''):lower()]
  local size = vim.fn.getfsize(file)
  if not mime then
    notify(('%s: not a png, jpeg, gif or webp image'):format(path), vim.log.levels.ERROR)
    return false
  elseif size <= 0 or size > MAX_IMAGE_BYTES then
    notify(('%s: %s'):format(path, size <= 0 and 'cannot be read' or 'larger than 5 MiB'), vim.log.levels.ERROR)
    return false
  end
  local handle = assert(io.open(file, 'rb'))
  local bytes = handle:read('*a')
  handle:close()
  attachments[root] = attachments[root] or {}
  table.insert(attachments[root], { mimeType = mime, data = vim.base64.encode(bytes) })
  notify(('%s attached to the next ask (%d image(s))'):format(vim.fn.fnamemodify(file, ':t'), #attachments[root]))
  return true
end

--- The images attached for the next ask of `root`, taken (they go with one ask only).
---@param root string
---@return table[]?
local function take_attachments(root)
  local images = attachments[root]
  attachments[root] = nil
  return images
end

---@param daemon mini_agent.Daemon
---@param root string
---@param task string
---@param opts table
---@param done mini_agent.Done
local function start(daemon, root, task, opts, done)
  local params = pick(opts, SESSION_KEYS)
  params.task, params.llm, params.images = task, config.compact(opts.llm or {}), take_attachments(root)
  picks.session_params(root, params)
  client.request(daemon, 'agent/startSession', params, function(err, result)
    if err then
      notify('could not start a session: ' .. err.message, vim.log.levels.ERROR)
      done(err)
      return
    end
    if result.command then -- a slash command: the daemon answered it and started no session
      commands.show(result.sessionId ~= vim.NIL and result.sessionId or nil, result)
      done(nil, result)
      return
    end
    local session = sessions.track(result.sessionId, { task = task, root = root, status = result.status })
    conversations[root] = session.id
    trace.session_start(session.id, task)
    sessions.fire('MiniAgentSessionStart', { sessionId = session.id, task = task, root = root })
    run(daemon, session, done)
  end)
end

--- Start a session with a task and run it to its end; with `opts.continue`, a follow-up turn in the
--- workspace's conversation instead (the session asked last, once its turn ended), when there is one
--- and the daemon takes it.
---@param task string
---@param opts {root: string?, continue: boolean?, maxSteps: integer?, tools: string[]?, systemPrompt: string?,
---  llm: table?, on_done: mini_agent.Done?}?
function M.ask(task, opts)
  vim.validate('task', task, 'string')
  opts = opts or {}
  local root = opts.root or config.root()
  local done = opts.on_done or ignore
  with_daemon(root, done, function(daemon)
    local session = opts.continue and sessions.sessions[conversations[root] or '']
    if not session or session.running then
      start(daemon, root, task, opts, done)
      return
    end
    local follow_up = { sessionId = session.id, text = task, images = take_attachments(root) }
    client.request(daemon, 'agent/prompt', follow_up, function(err, result)
      if err then -- deleted, or stepping elsewhere: start afresh rather than fail the question
        attachments[root] = follow_up.images
        start(daemon, root, task, opts, done)
        return
      end
      if result and result.command then
        commands.show(session.id, result)
        done(nil, result)
        return
      end
      -- its header came with the daemon's user_message_chunk, before this answer
      sessions.fire('MiniAgentSessionStart', { sessionId = session.id, task = task, root = root, followUp = true })
      run(daemon, session, done)
    end)
  end)
end

--- Fork the workspace's conversation (agent/forkSession): a new session with its history up to `step`
--- (default: every step that has ended), which :MiniAgentAsk then talks to; the original is left as it
--- was. The fork's history is shown in the trace.
---@param opts {root: string?, step: integer?, on_done: mini_agent.Done?}?
function M.fork(opts)
  opts = opts or {}
  local root = opts.root or config.root()
  local done = opts.on_done or ignore
  local source = conversations[root]
  if not source then
    notify('no conversation to fork: ask something first (:MiniAgentAsk)', vim.log.levels.WARN)
    done({ message = 'no conversation' })
    return
  end
  with_daemon(root, done, function(daemon)
    client.request(daemon, 'agent/forkSession', { sessionId = source, step = opts.step }, function(err, forked)
      if err then
        notify('could not fork: ' .. err.message, vim.log.levels.ERROR)
        done(err)
        return
      end
      sessions.track(forked.sessionId, { task = forked.task, root = root, status = forked.status })
      conversations[root] = forked.sessionId
      notify(('forked %s into %s (%d steps): :MiniAgentAsk goes on in the fork'):format(
        trace.short(source), trace.short(forked.sessionId), #(forked.steps or {})))
      M.show(forked.sessionId, { root = root, on_done = function(show_err) done(show_err, forked) end })
    end)
  end)
end

--- The task for :MiniAgentAsk: the arguments, plus the selected lines when a range was given.
---@param args {args: string, range: integer, line1: integer, line2: integer}
---@param text string
---@return string
function M.task_with_range(args, text)
  if args.range == 0 then
    return text
  end
  local lines = vim.api.nvim_buf_get_lines(0, args.line1 - 1, args.line2, false)
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ':~:.')
  return ('%s\n\nLines %d-%d of %s:\n```%s\n%s\n```'):format(
    text,
    args.line1,
    args.line2,
    name ~= '' and name or '[No Name]',
    vim.bo.filetype,
    table.concat(lines, '\n')
  )
end

--- :MiniAgentAsk[!] [task] — without a task, ask for one; with !, in a new conversation.
function M.ask_command(args)
  local opts = { continue = not args.bang }
  if args.args ~= '' then
    M.ask(M.task_with_range(args, args.args), opts)
    return
  end
  local completion = "customlist,v:lua.require'mini_agent.commands'.complete"
  vim.ui.input({ prompt = 'mini-agent task: ', completion = completion }, function(input)
    if input and vim.trim(input) ~= '' then
      M.ask(M.task_with_range(args, input), opts)
    end
  end)
end

local function watch_saves()
  local group = vim.api.nvim_create_augroup('mini_agent_reload', { clear = true })
  vim.api.nvim_create_autocmd('BufWritePost', {
    group = group,
    callback = function(ev)
      local path = vim.fs.normalize(vim.api.nvim_buf_get_name(ev.buf))
      local daemon = registered[path] and client.get(registered[path])
      if daemon then
        local changed = { uri = vim.uri_from_fname(path), type = 2 }
        client.notify(daemon, 'workspace/didChangeWatchedFiles', { changes = { changed } })
      end
    end,
  })
end

--- Register a workspace Python file's public functions (or one of them) as tools.
---@param path string? default: the current buffer's file
---@param opts {function: string?, name: string?, description: string?, requiresApproval: boolean?,
---  idempotent: boolean?, timeoutSec: number?, root: string?, on_done: mini_agent.Done?}?
function M.register(path, opts)
  opts = opts or {}
  local done = opts.on_done or ignore
  path = (path and path ~= '') and path or vim.api.nvim_buf_get_name(0)
  if path == '' then
    notify('no file to register: give a path or open a Python file', vim.log.levels.ERROR)
    done({ message = 'no file' })
    return
  end
  path = vim.fs.normalize(vim.fn.fnamemodify(path, ':p'))
  local root = opts.root or config.root()
  with_daemon(root, done, function(daemon)
    local params = vim.tbl_extend('force', pick(opts, REGISTER_KEYS), { path = path })
    client.request(daemon, 'agent/registerTool', params, function(err, result)
      if err then
        notify('could not register ' .. path .. ': ' .. err.message, vim.log.levels.ERROR)
        done(err)
        return
      end
      if vim.tbl_isempty(registered) then
        watch_saves()
      end
      registered[path] = root
      notify('registered ' .. tool_names(result.tools))
      done(nil, result)
    end)
  end)
end

--- Trust the workspace (agent/trustWorkspace): the daemon may now import its files, and restores the
--- tool registrations kept in its store. A daemon started again for this root in this Neovim starts
--- trusted.
---@param opts {root: string?, on_done: mini_agent.Done?}?
function M.trust(opts)
  opts = opts or {}
  local root = opts.root or config.root()
  local done = opts.on_done or ignore
  with_daemon(root, done, function(daemon)
    client.request(daemon, 'agent/trustWorkspace', vim.empty_dict(), function(err, result)
      if err then
        notify(('could not trust %s: %s'):format(root, err.message), vim.log.levels.ERROR)
        done(err)
        return
      end
      config.trust(root)
      notify(('trusted %s; its tools: %s'):format(root, tool_names(result.tools)))
      done(nil, result)
    end)
  end)
end

--- Apply a change to the workspace's conversation (agent/configureSession), when this daemon holds
--- one; `callback(err)` gets the daemon's refusal (ask_never in an untrusted folder), if any.
---@param daemon mini_agent.Daemon
---@param root string
---@param change {model: string?, permissionMode: string?}
---@param callback fun(err: table?)
local function configure(daemon, root, change, callback)
  local sid = conversations[root]
  if not sid or not sessions.sessions[sid] then
    callback(nil)
    return
  end
  local params = vim.tbl_extend('force', { sessionId = sid }, change)
  client.request(daemon, 'agent/configureSession', params, function(err)
    -- a session gone with an earlier daemon: the pick is for the new sessions
    callback(not (err and vim.tbl_get(err, 'data', 'reason') == 'unknown_session') and err or nil)
  end)
end

---@param daemon mini_agent.Daemon
---@param root string
---@param change {model: string?, permissionMode: string?}
---@param what string how the change reads in the notification
---@param done mini_agent.Done
local function keep(daemon, root, change, what, done)
  configure(daemon, root, change, function(err)
    if err then
      notify(err.message, vim.log.levels.ERROR)
      done(err)
      return
    end
    local state = picks.state(root)
    state.model = change.model or state.model
    state.mode = change.permissionMode or state.mode
    notify(what .. ' (this conversation and the next ones)')
    done(nil, change)
  end)
end

--- The model of the workspace's conversation and of its new sessions: `name`, or one picked with
--- vim.ui.select from what the model server lists (`agent/listModels`; `opts.refresh`: ask it again).
---@param name string?
---@param opts {root: string?, refresh: boolean?, on_done: mini_agent.Done?}?
function M.model(name, opts)
  opts = opts or {}
  local root = opts.root or config.root()
  local done = opts.on_done or ignore
  with_daemon(root, done, function(daemon)
    if name and name ~= '' then
      keep(daemon, root, { model = name }, 'model: ' .. name, done)
      return
    end
    local params = opts.refresh and { refresh = true } or vim.empty_dict()
    client.request(daemon, 'agent/listModels', params, function(err, listing)
      if err then
        notify('could not list the models: ' .. err.message, vim.log.levels.ERROR)
        done(err)
        return
      end
      local state = picks.state(root)
      state.listing = listing
      local current = state.model or listing.current
      local ids, why = picks.model_choices(listing, current)
      local select_opts = {
        prompt = why and ('mini-agent model — %s'):format(why)
          or ('mini-agent model (%s lists these)'):format(listing.baseUrl),
        kind = 'mini_agent.model',
        format_item = function(id)
          return id == current and (id .. '  (current)') or id
        end,
      }
      require('mini_agent.text').select(ids, select_opts, function(choice)
        if choice then
          keep(daemon, root, { model = choice }, 'model: ' .. choice, done)
        else
          done(nil, nil)
        end
      end)
    end)
  end)
end

--- The permission mode of the workspace's conversation and of its new sessions: `mode`, or one
--- picked with vim.ui.select.
---@param mode string?
---@param opts {root: string?, on_done: mini_agent.Done?}?
function M.mode(mode, opts)
  opts = opts or {}
  local root = opts.root or config.root()
  local done = opts.on_done or ignore
  local function set(choice)
    with_daemon(root, done, function(daemon)
      keep(daemon, root, { permissionMode = choice.mode }, 'permission mode: ' .. choice.label, done)
    end)
  end
  if mode and mode ~= '' then
    local choice = picks.mode_choice(mode)
    if not choice then
      notify(('unknown permission mode %q: ask_always, ask_when_needed or ask_never'):format(mode), vim.log.levels.ERROR)
      done({ message = 'unknown permission mode ' .. mode })
      return
    end
    set(choice)
    return
  end
  local current = picks.mode(root)
  require('mini_agent.text').select(picks.MODES, {
    prompt = 'mini-agent permission mode',
    kind = 'mini_agent.mode',
    format_item = function(choice)
      return ('%s — %s%s'):format(choice.label, choice.description, choice.mode == current and '  (current)' or '')
    end,
  }, function(choice)
    if choice then
      set(choice)
    else
      done(nil, nil)
    end
  end)
end

--- Completion of :MiniAgentModel: the models the server listed last (asked now, bounded, when the
--- daemon runs and none were listed yet).
---@param lead string
---@return string[]
function M.complete_models(lead)
  local root = config.root()
  local state = picks.state(root)
  local daemon = client.get(root)
  local lsp_client = daemon and daemon.ready and vim.lsp.get_client_by_id(daemon.id)
  if not state.listing and lsp_client then
    local reply = lsp_client:request_sync('agent/listModels', vim.empty_dict(), client.COMPLETE_WAIT_MS)
    state.listing = reply and reply.result or nil
  end
  local ids = state.listing and picks.model_choices(state.listing, state.model) or { picks.model(root) }
  return vim.tbl_filter(function(id)
    return vim.startswith(id, lead)
  end, ids)
end

---@param sid string a session id or the start of one
---@return mini_agent.Session?
local function find_session(sid)
  for i = #sessions.order, 1, -1 do
    local id = sessions.order[i]
    if vim.startswith(id, sid) then
      return sessions.sessions[id]
    end
  end
end

--- Cancel a session's step in flight (default: the newest running session).
---@param sid string?
---@param on_done mini_agent.Done?
function M.cancel(sid, on_done)
  local done = on_done or ignore
  local session = (sid and sid ~= '') and find_session(sid) or sessions.latest_running()
  local daemon = session and client.get(session.root)
  if not session or not daemon then
    notify('no running session to cancel', vim.log.levels.WARN)
    done({ message = 'no running session' })
    return
  end
  client.request(daemon, 'agent/cancel', { sessionId = session.id }, function(err, result)
    if err then
      notify('cancel failed: ' .. err.message, vim.log.levels.ERROR)
    elseif not result.cancelled then
      notify(('session %s had no step in flight'):format(trace.short(session.id)), vim.log.levels.WARN)
    end
    done(err, result)
  end)
end

--- Show a stored session in the trace.
---@param sid string
---@param opts {root: string?, on_done: mini_agent.Done?}?
function M.show(sid, opts)
  opts = opts or {}
  local done = opts.on_done or ignore
  with_daemon(opts.root or config.root(), done, function(daemon)
    client.request(daemon, 'agent/getSession', { sessionId = sid }, function(err, session)
      if err then
        notify('no such session: ' .. err.message, vim.log.levels.ERROR)
        done(err, session)
        return
      end
      local label = ('%s, %d steps (history)'):format(session.status, #(session.steps or {}))
      trace.session_start(sid, session.task or '', label)
      -- the daemon sends the history as agent/update, follow-ups in place, before it answers
      sessions.replaying[sid] = true
      client.request(daemon, 'agent/loadSession', { sessionId = sid }, function(load_err)
        sessions.replaying[sid] = nil
        if load_err then
          trace.note(sid, 'could not replay the session: ' .. load_err.message, true)
        elseif session.status == 'awaiting_approval' then
          trace.update(sid, #(session.steps or {}), { kind = 'status', status = 'awaiting_approval' })
        end
        trace.open()
        done(load_err, session)
      end)
    end)
  end)
end

local function describe(summary)
  local status = summary.status .. (summary.stopReason and (' (' .. summary.stopReason .. ')') or '')
  local task = vim.split(summary.task or '', '\n', { plain = true })[1]
  return ('%s  %-28s %s'):format(trace.short(summary.sessionId), status, task)
end

--- Pick one of the daemon's sessions and show it in the trace.
---@param opts {root: string?, on_done: mini_agent.Done?}?
function M.sessions(opts)
  opts = opts or {}
  local root = opts.root or config.root()
  local done = opts.on_done or ignore
  with_daemon(root, done, function(daemon)
    client.request(daemon, 'agent/listSessions', { limit = 100 }, function(err, result)
      if err or #result.sessions == 0 then
        notify(err and err.message or 'no sessions yet', err and vim.log.levels.ERROR or vim.log.levels.INFO)
        done(err, result)
        return
      end
      local select_opts = { prompt = 'mini-agent sessions', kind = 'mini_agent.session', format_item = describe }
      require('mini_agent.text').select(result.sessions, select_opts, function(choice)
        if choice then
          M.show(choice.sessionId, { root = root, on_done = done })
        else
          done(nil, nil)
        end
      end)
    end)
  end)
end

--- Record a decision for a tool call awaiting approval; a session with no run of ours in flight
--- (a daemon restart, a dismissed prompt) is run again so that the decision takes effect.
---@param sid string
---@param call_id string
---@param decision 'allow_once'|'allow_always'|'reject_once'|'reject_always'
---@param reason string?
---@param client_id integer?
function M.approve(sid, call_id, decision, reason, client_id)
  local session = sessions.sessions[sid]
  local daemon = (client_id and client.by_client(client_id)) or (session and client.get(session.root))
  if not daemon then
    notify('no daemon holds session ' .. sid, vim.log.levels.ERROR)
    return
  end
  session = session or sessions.track(sid, { root = daemon.root })
  local params = { sessionId = sid, toolCallId = call_id, decision = decision, reason = reason }
  client.request(daemon, 'agent/approve', params, function(err)
    if err then
      notify('approval failed: ' .. err.message, vim.log.levels.ERROR)
    elseif not session.running then
      run(daemon, session)
    end
  end)
end

--- Tool calls waiting for a decision in any session of this workspace: pick one and decide.
--- (The protocol has no list of standing "always" decisions; these are the open ones.)
---@param opts {root: string?}?
function M.approvals(opts)
  opts = opts or {}
  with_daemon(opts.root or config.root(), ignore, function(daemon)
    client.request(daemon, 'agent/listSessions', { status = 'awaiting_approval' }, function(err, result)
      local waiting = (not err and result.sessions) or {}
      if #waiting == 0 then
        notify(err and err.message or 'no tool call is waiting for approval')
        return
      end
      local pending, left = {}, #waiting
      local function choose()
        require('mini_agent.text').select(pending, {
          prompt = 'mini-agent: tool calls waiting for approval',
          kind = 'mini_agent.pending',
          format_item = function(item)
            return ('%s  %s %s'):format(trace.short(item.sessionId), item.toolCall.name, trace.arguments(item.toolCall))
          end,
        }, function(item)
          if item then
            require('mini_agent.approval').choose(item.toolCall, nil, function(decision, reason)
              M.approve(item.sessionId, item.toolCall.id, decision, reason, daemon.id)
            end)
          end
        end)
      end
      for _, summary in ipairs(waiting) do
        client.request(daemon, 'agent/getSession', { sessionId = summary.sessionId }, function(_, session)
          for _, p in ipairs(session and session.pendingApprovals or {}) do
            table.insert(pending, { sessionId = summary.sessionId, toolCall = p.toolCall })
          end
          left = left - 1
          if left == 0 and #pending > 0 then
            choose()
          end
        end)
      end
    end)
  end)
end

--- Open the daemon's log.
function M.log()
  require('mini_agent.log').open()
end

--- Show or hide the trace window (without moving the cursor into it).
function M.toggle_trace()
  trace.toggle()
end

--- Stop the daemons this plugin started.
function M.stop()
  client.stop()
end

return M
