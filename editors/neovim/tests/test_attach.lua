-- :MiniAgentAttach puts an image file on the next :MiniAgentAsk only: the daemon gets it with the
-- follow-up (agent/prompt images), its user_message_chunk names it, and in react mode the model is told
-- it was left out. A file that is not an image is refused by name.
local h = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/helpers.lua')

h.run(function()
  vim.g.mini_agent = { llm = { baseUrl = h.base_url, model = 'replay', toolMode = 'react' } }
  h.load_plugin()
  local events = h.record_events({ 'MiniAgentSessionEnd' })
  local updates = h.record_events({ 'MiniAgentUpdate' })
  local notes = {}
  vim.notify = function(msg, level)
    table.insert(notes, { msg = msg, level = level })
  end

  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, 'p')
  local text_file, png = dir .. '/notes.txt', dir .. '/shot.png'
  vim.fn.writefile({ 'not an image' }, text_file)
  local handle = assert(io.open(png, 'wb'))
  handle:write('\137PNG\r\n\26\n' .. string.rep('\0', 24))
  handle:close()

  vim.cmd('MiniAgentAttach ' .. text_file)
  h.find(notes[#notes].msg, 'not a png, jpeg, gif or webp image')

  vim.cmd('MiniAgentAsk first question')
  h.wait('the first answer', function()
    return h.count(events, 'MiniAgentSessionEnd') >= 1
  end)
  vim.cmd('MiniAgentAttach ' .. png)
  h.find(notes[#notes].msg, 'shot.png attached to the next ask')
  vim.cmd('MiniAgentAsk what is in it?')
  h.wait('the second answer', function()
    return h.count(events, 'MiniAgentSessionEnd') >= 2
  end)

  local chunk
  for _, event in ipairs(updates) do
    local update = event.data.update
    if update and update.kind == 'user_message_chunk' then
      chunk = update
    end
  end
  assert(chunk, 'the follow-up came back as a user_message_chunk')
  h.eq('image/png', chunk.images[1].mimeType, 'the image went with the follow-up')
  h.eq(32, chunk.images[1].bytes, 'its size')
  local answer = events[#events].data.finalAnswer
  h.find(answer, '[1 image attached to this message left out')
end)
