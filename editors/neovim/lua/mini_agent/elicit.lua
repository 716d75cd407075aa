--- Elicitation: the `agent/elicit` handler, an MCP server's question put to the user.
---
--- Form mode asks one field at a time: `vim.ui.input` for a string or a number (its default filled
--- in), `vim.ui.select` for a boolean, a choice (`enum`, `oneOf`) and, one toggle at a time, a list
--- of choices; then one `vim.ui.select` to send the answers or decline. URL mode offers to open the
--- link (`vim.ui.open`) or decline. A dismissed prompt (<Esc>, nil) cancels the whole question. The
--- answer is `{action = "accept", content = {...}}` with values typed as the schema says,
--- `{action = "decline"}` or `{action = "cancel"}`.
---
--- As for approvals, vim.lsp runs the handler inside a coroutine: it yields until each prompt has
--- been answered, whether the prompt answers at once (the built-in ones) or later (pickers).
local log = require('mini_agent.log')
local inert = require('mini_agent.text')

local M = {}

--- How many times one field is asked again after an answer that does not fit its schema; past it
--- the question is cancelled and the user is told which field and why.
M.MAX_ATTEMPTS = 5

M.SEND = 'Send'
M.DECLINE = 'Decline'
M.OPEN = 'Open the link'
M.DONE = '✓ Done'

local CANCEL = { action = 'cancel' }
local DECLINE = { action = 'decline' }

--- Run `start(done)` and wait for `done(value)` (yielding the handler's coroutine when it comes later).
local function await(start)
  local co = coroutine.running()
  local result, finished, waiting = nil, false, false
  start(function(value)
    result, finished = value, true
    if waiting then
      local ok, err = coroutine.resume(co)
      if not ok then
        log.write('answering agent/elicit failed: ' .. tostring(err))
      end
    end
  end)
  if not finished then
    waiting = true
    coroutine.yield()
  end
  return result
end

local function input(opts)
  return await(function(done)
    inert.input(opts, done)
  end)
end

local function select(items, opts)
  return await(function(done)
    inert.select(items, opts, function(choice)
      done(choice)
    end)
  end)
end

--- The field's choices as `{value, label}`: from `enum` (with `enumNames`), `oneOf`/`anyOf` consts,
--- or the items of an array.
---@param prop table
---@return {value: any, label: string}[]?
function M.choices(prop)
  local source = prop.type == 'array' and type(prop.items) == 'table' and prop.items or prop
  if type(source.enum) == 'table' then
    local names = type(source.enumNames) == 'table' and source.enumNames or {}
    return vim.tbl_map(function(i)
      return { value = source.enum[i], label = tostring(names[i] or source.enum[i]) }
    end, vim.fn.range(1, #source.enum))
  end
  local options = source.oneOf or source.anyOf
  if type(options) == 'table' then
    return vim.tbl_map(function(option)
      return { value = option.const, label = tostring(option.title or option.const) }
    end, options)
  end
end

local FORMATS = {
  email = { '^[^%s@]+@[^%s@]+%.[^%s@]+$', 'an email address' },
  uri = { '^%a[%w+.-]*:%S+$', 'a URI such as https://example.com' },
  date = { '^%d%d%d%d%-%d%d%-%d%d$', 'a date as YYYY-MM-DD' },
  ['date-time'] = { '^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d', 'a date and time as YYYY-MM-DDTHH:MM:SSZ' },
}

--- Parse what was typed for a string or number field: the typed value, or nil and what is wrong.
--- An empty answer to an optional field is `vim.NIL` (left out).
---@param prop table the field's schema
---@param text string
---@param required boolean
---@return any value
---@return string? problem
function M.parse(prop, text, required)
  if text == '' then
    if required then
      return nil, 'an answer is required'
    end
    return vim.NIL
  end
  if prop.type == 'number' or prop.type == 'integer' then
    local number = tonumber(text)
    if number == nil then
      return nil, ('%q is not a number'):format(text)
    end
    if prop.type == 'integer' and number ~= math.floor(number) then
      return nil, ('%q is not a whole number'):format(text)
    end
    if prop.minimum and number < prop.minimum then
      return nil, ('at least %s'):format(prop.minimum)
    end
    if prop.maximum and number > prop.maximum then
      return nil, ('at most %s'):format(prop.maximum)
    end
    return number
  end
  local length = vim.fn.strchars(text)
  if prop.minLength and length < prop.minLength then
    return nil, ('at least %d characters'):format(prop.minLength)
  end
  if prop.maxLength and length > prop.maxLength then
    return nil, ('at most %d characters'):format(prop.maxLength)
  end
  local format = FORMATS[prop.format]
  if format and not text:match(format[1]) then
    return nil, ('not %s'):format(format[2])
  end
  return text
end

local function label(name, prop, required)
  return ('%s%s'):format(prop.title or name, required and ' (required)' or '')
end

local function ask_text(header, name, prop, required)
  local problem
  for _ = 1, M.MAX_ATTEMPTS do
    local default = prop.default ~= nil and tostring(prop.default) or nil
    local hint = prop.description and (' — ' .. prop.description) or ''
    local again = problem and (' [%s]'):format(problem) or ''
    local prompt = ('%s\n%s%s%s: '):format(header, label(name, prop, required), hint, again)
    local text = input({ prompt = prompt, default = default })
    if text == nil then
      return nil
    end
    local value
    value, problem = M.parse(prop, text, required)
    if not problem then
      return value
    end
  end
  inert.notify(('mini-agent: %s: %s; the question is cancelled'):format(name, problem), vim.log.levels.WARN)
end

local function ask_choice(header, name, prop, required)
  local choices = M.choices(prop) or {}
  local items = vim.deepcopy(choices)
  if not required then
    table.insert(items, { value = vim.NIL, label = '(no answer)' })
  end
  local choice = select(items, {
    prompt = ('%s\n%s%s'):format(
      header,
      label(name, prop, required),
      prop.description and (' — ' .. prop.description) or ''
    ),
    kind = 'mini_agent.elicit',
    format_item = function(item)
      return item.label .. (prop.default ~= nil and item.value == prop.default and ' (default)' or '')
    end,
  })
  return choice and choice.value
end

local function ask_boolean(header, name, prop, required)
  local items = { { value = true, label = 'Yes' }, { value = false, label = 'No' } }
  if prop.default == false then
    items = { items[2], items[1] }
  end
  return ask_choice(header, name, vim.tbl_extend('force', prop, { oneOf = vim.tbl_map(function(item)
    return { const = item.value, title = item.label }
  end, items) }), required)
end

local function ask_many(header, name, prop)
  local picked = {}
  for _, value in ipairs(type(prop.default) == 'table' and prop.default or {}) do
    picked[value] = true
  end
  local choices = M.choices(prop) or {}
  while true do
    local items = { { done = true, label = M.DONE } }
    for _, choice in ipairs(choices) do
      table.insert(items, { value = choice.value, label = (picked[choice.value] and '[x] ' or '[ ] ') .. choice.label })
    end
    local choice = select(items, {
      prompt = ('%s\n%s: pick to toggle, then %s'):format(header, label(name, prop, false), M.DONE),
      kind = 'mini_agent.elicit',
      format_item = function(item)
        return item.label
      end,
    })
    if choice == nil then
      return nil
    end
    if choice.done then
      return vim.tbl_map(function(c)
        return c.value
      end, vim.tbl_filter(function(c)
        return picked[c.value]
      end, choices))
    end
    picked[choice.value] = not picked[choice.value] or nil
  end
end

--- Ask one field; nil when the user dismissed the prompt, vim.NIL when an optional field is left out.
local function ask_field(header, name, prop, required)
  if prop.type == 'boolean' then
    return ask_boolean(header, name, prop, required)
  elseif prop.type == 'array' then
    return ask_many(header, name, prop)
  elseif M.choices(prop) then
    return ask_choice(header, name, prop, required)
  end
  return ask_text(header, name, prop, required)
end

--- The properties in the order the server listed them where known (`required` first), else by name.
local function field_names(schema)
  local names = vim.tbl_keys(schema.properties or {})
  local required = {}
  for i, name in ipairs(schema.required or {}) do
    required[name] = i
  end
  table.sort(names, function(a, b)
    local ra, rb = required[a] or math.huge, required[b] or math.huge
    if ra ~= rb then
      return ra < rb
    end
    return a < b
  end)
  return names, required
end

local function form(params)
  local schema = params.requestedSchema or {}
  local header = ('%s asks: %s'):format(params.serverName or 'an MCP server', params.message or '')
  local names, required = field_names(schema)
  local content, shown = {}, {}
  for _, name in ipairs(names) do
    local value = ask_field(header, name, schema.properties[name], required[name] ~= nil)
    if value == nil then
      return CANCEL
    end
    if value ~= vim.NIL then
      content[name] = value
      table.insert(shown, ('%s = %s'):format(name, vim.json.encode(value)))
    end
  end
  local summary = #shown > 0 and ('Send %s?'):format(table.concat(shown, ', ')) or 'Answer?'
  local prompt = ('%s\n%s'):format(header, summary)
  local final = select({ M.SEND, M.DECLINE }, { prompt = prompt, kind = 'mini_agent.elicit' })
  if final == nil then
    return CANCEL
  elseif final == M.DECLINE then
    return DECLINE
  end
  return { action = 'accept', content = next(content) and content or vim.empty_dict() }
end

local function link(params)
  local prompt = ('%s asks: %s\n%s'):format(params.serverName or 'an MCP server', params.message or '', params.url)
  local choice = select({ M.OPEN, M.DECLINE }, { prompt = prompt, kind = 'mini_agent.elicit' })
  if choice == nil then
    return CANCEL
  elseif choice == M.DECLINE then
    return DECLINE
  end
  local _, err = vim.ui.open(params.url)
  if err then
    inert.notify(('mini-agent: could not open %s: %s'):format(params.url, err), vim.log.levels.WARN)
  end
  return { action = 'accept' }
end

--- The `agent/elicit` handler. Outside a coroutine (no way to wait) it declines.
---@param params table {sessionId, serverName, message, requestedSchema?} or {…, mode = 'url', url}
---@return table result
function M.handle(params)
  local co, is_main = coroutine.running()
  if not co or is_main then
    log.write('agent/elicit outside a coroutine: declined')
    return DECLINE
  end
  local answer = params.mode == 'url' and link(params) or form(params)
  log.write(('agent/elicit from %s: %s'):format(tostring(params.serverName), answer.action))
  return answer
end

--- What the plugin announces in `initialize`: it answers form and URL elicitations.
function M.capability()
  return { form = vim.empty_dict(), url = vim.empty_dict() }
end

return M
