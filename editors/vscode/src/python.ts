/**
 * Text-level Python helpers for the register commands. No parser: the daemon reflects the function
 * properly; the editor only needs the name of the top-level `def` the cursor is in or below.
 */

const DEF = /^(?:async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(/;

/**
 * The top-level function the cursor line belongs to: the nearest `def` at column 0 at or above it
 * (skipping decorators below it), or undefined when the cursor is above every def or inside a class.
 */
export function functionAtLine(lines: readonly string[], line: number): string | undefined {
  const start = Math.min(Math.max(line, 0), lines.length - 1);
  // On a decorator line: the def it decorates is below.
  for (let i = start; i < lines.length && lines[i].startsWith("@"); i += 1) {
    const below = DEF.exec(lines[i + 1] ?? "");
    if (below) return below[1];
  }
  for (let i = start; i >= 0; i -= 1) {
    const text = lines[i];
    const match = DEF.exec(text);
    if (match) return match[1];
    if (/^class\s/.test(text)) return undefined;
  }
  return undefined;
}

