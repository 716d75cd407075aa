-- An MCP server that asks the user (tests/support/eliciting_mcp_server.py, named in the workspace file):
-- its `elicitation/create` reaches the plugin as agent/elicit. The name is typed into vim.ui.input
-- ("Ada"), the greeting's default ("hello") is kept, and "Send" sends them: the server records
-- "hello Ada". <Esc> at the first field cancels, "Decline" declines, and a URL-mode question opens the
-- link with vim.ui.open when the user picks "Open the link". The answers file is what the server got.
-- Then: the capabilities announced (elicitation, window/showDocument kept), and a form whose answers
-- come back typed (a whole number asked again after "4.5", a boolean, a choice's value, a list).
local h = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

local SERVER = vim.fs.normalize(h.plugin_dir .. '/../../tests/support/eliciting_mcp_server.py')
local ANSWERS = h.root .. '/answers.txt'

local function ask(task)
  local result
  require('mini_agent').ask(task, {
    on_done = function(err, res)
      result = { err = err, res = res }
    end,
  })
  h.wait('the session "' .. task .. '" to end', function()
    return result ~= nil
  end)
  assert(not result.err, vim.inspect(result.err))
  -- the tool's text first (its structured content may follow on the next line)
  result.res.firstLine = vim.split(result.res.finalAnswer or '', '\n')[1]
  return result.res
end

local function answers()
  return vim.fn.filereadable(ANSWERS) == 1 and vim.fn.readfile(ANSWERS) or {}
end

h.run(function()
  assert(vim.fn.filereadable(SERVER) == 1, 'no eliciting server at ' .. SERVER)
  vim.fn.writefile({
    '[tool.mini-agent]',
    '[[tool.mini-agent.mcp_servers]]',
    'name = "greeter"',
    ('command = %q'):format(h.python),
    ('args = [%q, %q]'):format(SERVER, ANSWERS),
    'requires_approval = false',
  }, h.root .. '/pyproject.toml')
  h.load_plugin()
  require('mini_agent').setup({
    cmd = h.daemon_cmd(),
    llm = { baseUrl = h.base_url, model = 'replay' },
    trust_workspace = true,
  })

  local inputs, selects, opened = {}, {}, {}
  local typed, picked = {}, {}
  vim.ui.input = function(opts, on_confirm)
    table.insert(inputs, { prompt = opts.prompt, default = opts.default })
    local answer = table.remove(typed, 1)
    if answer == 'default' then
      answer = opts.default
    end
    vim.defer_fn(function() -- later, as a floating input does
      on_confirm(answer)
    end, 50)
  end
  vim.ui.select = function(items, opts, on_choice)
    local labels = vim.tbl_map(opts.format_item or tostring, items)
    table.insert(selects, { prompt = opts.prompt, items = labels })
    local want = table.remove(picked, 1)
    on_choice(want and items[vim.fn.index(labels, want) + 1] or nil)
  end
  vim.ui.open = function(url)
    table.insert(opened, url)
    return nil, nil
  end

  -- typed "Ada", kept the default greeting, sent
  typed, picked = { 'Ada', 'default' }, { 'Send' }
  local sent = ask('Greet me')
  h.eq('hello Ada', sent.firstLine, 'answer after sending')
  h.eq({ 'hello Ada' }, answers(), 'what the server got')
  h.eq(2, #inputs, 'input prompts')
  h.find(inputs[1].prompt, 'greeter asks: What is your name?')
  h.find(inputs[1].prompt, 'Name (required) — Your name')
  h.find(inputs[2].prompt, 'Greeting')
  h.eq('hello', inputs[2].default, 'the greeting prompt holds its default')
  h.find(selects[1].prompt, 'Send name = "Ada", greeting = "hello"?')
  h.eq({ 'Send', 'Decline' }, selects[1].items, 'final choices')

  -- an empty required name is asked again; then <Esc> cancels the question
  typed, picked = { '', nil }, {}
  local cancelled = ask('Greet me again')
  h.eq('cancel', cancelled.firstLine, 'answer after <Esc>')
  h.find(inputs[4].prompt, '[an answer is required]')

  -- filled in, then declined
  typed, picked = { 'Grace', 'default' }, { 'Decline' }
  local declined = ask('Greet me once more')
  h.eq('decline', declined.firstLine, 'answer after Decline')

  -- URL mode: the link is shown and opened
  picked = { 'Open the link' }
  local linked = ask('Sign the form')
  h.eq('link accept', linked.firstLine, 'answer after opening the link')
  h.find(selects[#selects].prompt, 'https://example.com/form')
  h.eq({ 'https://example.com/form' }, opened, 'links opened')

  h.eq({ 'hello Ada', 'cancel', 'decline', 'link accept' }, answers(), 'everything the server got')

  -- what the plugin announced: elicitation in both modes, and the built-in window/showDocument (whose
  -- handler opens an external link with vim.ui.open) left in place
  local daemon = require('mini_agent.client').get(h.root)
  local client = vim.lsp.get_client_by_id(daemon.id)
  local modes = vim.tbl_keys(client.capabilities.experimental.agent.elicitation)
  table.sort(modes)
  h.eq({ 'form', 'url' }, modes, 'elicitation modes')
  h.eq(true, client.capabilities.window.showDocument.support, 'window/showDocument support')
  h.eq(nil, client.handlers['window/showDocument'], 'the plugin does not replace the window/showDocument handler')

  -- the answer is typed as the schema says: a whole number, a boolean, a choice's value, a list
  typed, picked = { '4.5', '42', '' }, { 'No', 'Green', '[ ] a', '✓ Done', 'Send' }
  local result
  coroutine.wrap(function()
    result = require('mini_agent.elicit').handle({
      serverName = 'form',
      message = 'Tell me',
      requestedSchema = {
        type = 'object',
        properties = {
          age = { type = 'integer', minimum = 0 },
          subscribe = { type = 'boolean' },
          color = { type = 'string', oneOf = { { const = 'r', title = 'Red' }, { const = 'g', title = 'Green' } } },
          tags = { type = 'array', items = { type = 'string', enum = { 'a', 'b' } } },
          note = { type = 'string' },
        },
        required = { 'age', 'subscribe', 'color', 'tags' },
      },
    })
  end)()
  h.wait('the typed form', function()
    return result ~= nil
  end)
  local expected = { age = 42, subscribe = false, color = 'g', tags = { 'a' } }
  h.eq({ action = 'accept', content = expected }, result, 'typed answer')
  h.find(inputs[#inputs - 1].prompt, '["4.5" is not a whole number]')
end)
