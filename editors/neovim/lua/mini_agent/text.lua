--- Text that others wrote (the model, a tool, an MCP server, the model server, a workspace file),
--- made inert before it reaches a message or a prompt.
---
--- Neovim never sends a control character of a message to the terminal, but it does act on some:
--- in `vim.notify`, `nvim_echo`, `input()` and `inputlist()` (the built-in `vim.ui.input` and
--- `vim.ui.select`) a carriage return goes back to column 0 and a backspace one cell left, so the
--- rest of the text overwrites what came before (an approval prompt can be made to show a harmless
--- call), and `input()` drops ESC silently. A picker may also hand its items to a program in a
--- terminal buffer, where escape sequences are interpreted. So every control character but tab and
--- newline is shown in caret notation, as Neovim draws it in a buffer (ESC as `^[`, CR as `^M`), a
--- C1 control as `<9b>`, and a bidirectional-text control (which reorders what follows it) as
--- `<U+202E>`. `M.line` also shows a newline as `^J`, for text that must stay on one line (a
--- picker's item). The trace buffer keeps the text as it came: Neovim draws it visibly there.
local M = {}

local function caret(c)
  local byte = c:byte()
  return byte == 127 and '^?' or ('^' .. string.char(byte + 64))
end

-- U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069 in UTF-8.
local BIDI = { '\216\156', '\226\128[\142\143\170-\174]', '\226\129[\166-\169]' }

--- The code point of one UTF-8 sequence of two or three bytes.
local function codepoint(c)
  local a, b, d = c:byte(1, 3)
  if d == nil then
    return a % 32 * 64 + b % 64
  end
  return a % 16 * 4096 + b % 64 * 64 + d % 64
end

local function shown(text, keep)
  text = tostring(text)
  text = text:gsub(keep, caret)
  text = text:gsub('\194([\128-\159])', function(c)
    return ('<%02x>'):format(c:byte())
  end)
  for _, pattern in ipairs(BIDI) do
    text = text:gsub(pattern, function(c)
      return ('<U+%04X>'):format(codepoint(c))
    end)
  end
  return text
end

--- `text` with its control characters shown visibly; tab and newline stay.
---@param text any
---@return string
function M.visible(text)
  return shown(text, '[%z\1-\8\11-\31\127]')
end

--- `text` on one line: as `M.visible`, and a newline shown as `^J` too.
---@param text any
---@return string
function M.line(text)
  return shown(text, '[%z\1-\8\10-\31\127]')
end

--- `vim.notify` with the message made visible.
---@param message any
---@param level integer?
function M.notify(message, level)
  vim.notify(M.visible(message), level)
end

--- `vim.ui.select` with the prompt made visible and each item shown on one line.
---@param items any[]
---@param opts table
---@param on_choice fun(item: any?, idx: integer?)
function M.select(items, opts, on_choice)
  local format = opts.format_item or tostring
  local safe = vim.tbl_extend('force', opts, {
    prompt = opts.prompt and M.visible(opts.prompt),
    format_item = function(item)
      return M.line(format(item))
    end,
  })
  vim.ui.select(items, safe, on_choice)
end

--- `vim.ui.input` with the prompt made visible (the default stays as it is: the command line draws
--- it visibly, and it is what the user edits).
---@param opts table
---@param on_confirm fun(text: string?)
function M.input(opts, on_confirm)
  vim.ui.input(vim.tbl_extend('force', opts, { prompt = opts.prompt and M.visible(opts.prompt) }), on_confirm)
end

return M
