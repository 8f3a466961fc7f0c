// The contract's text rules, shared by the peers: Python's strip and codepoint truncation.
'use strict';
// Python's str.strip(): Unicode whitespace (str.isspace), which differs from JS trim() at the edges
// (\x1c-\x1f and \x85 are whitespace in Python, \ufeff is not).
const WS = '[\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const STRIP = new RegExp(`^${WS}+|${WS}+$`, 'gu');
const strip = (s) => String(s).replace(STRIP, '');
/** The first `n` codepoints (not UTF-16 units). */
function take(s, n) {
  if (s.length <= n) return s; // fewer UTF-16 units than n means fewer codepoints too
  let i = 0, cp = 0;
  while (i < s.length && cp < n) { i += s.codePointAt(i) > 0xffff ? 2 : 1; cp++; }
  return s.slice(0, i);
}
const cpLen = (s) => { let n = 0; for (const _ of s) n++; return n; };
const ellipsize = (s, n) => (s.length > n && cpLen(s) > n ? take(s, n - 3) + '...' : s);

// The voice provider's prompt scaffolding (docs/voice-tools.md, "Prompt scaffolding"), as
// production's extension strips it now: cut at the first of the three markers that follows one or
// more newlines (from the first of those newlines), unwrap the legacy {"content": "…"} envelope, strip.
const MARKERS = ['MEMORY SEARCH RESULTS (', 'VOICE TOOL ROUTING:', '---\nHARD CONSTRAINTS for THIS reply'];
function scaffoldingStart(text) {
  let at = -1;
  for (const m of MARKERS) {
    for (let i = text.indexOf(m); i >= 0; i = text.indexOf(m, i + m.length)) {
      if (i > 0 && text[i - 1] === '\n') { if (at < 0 || i < at) at = i; break; }
    }
  }
  if (at < 0) return -1;
  while (at > 0 && text[at - 1] === '\n') at--;
  return at;
}
function spoken(prompt) {
  const cut = scaffoldingStart(prompt);
  let words = cut < 0 ? prompt : prompt.slice(0, cut);
  const t = strip(words);
  if (t.startsWith('{') && t.endsWith('}')) {
    try {
      const o = JSON.parse(t);
      if (o && typeof o === 'object' && !Array.isArray(o) && typeof o.content === 'string') words = o.content;
    } catch { /* braces that aren't JSON stay */ }
  }
  return strip(words);
}
/** memory_lookup's step 5: a row that starts `user: ` is read back without the scaffolding. */
function cleanRow(content) {
  if (!content.startsWith('user: ')) return content;
  const row = content.slice(6);
  const i = row.indexOf(' | assistant: ');
  return i < 0 ? `user: ${spoken(row)}` : `user: ${spoken(row.slice(0, i))} | assistant: ${strip(row.slice(i + 14))}`;
}

module.exports = { strip, take, ellipsize, spoken, cleanRow };
